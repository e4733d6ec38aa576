// toolhost as the official MCP TypeScript SDK client 2.x (@modelcontextprotocol/client) uses it
// in the 2026-07-28 era, over stdio and over Streamable HTTP: every request carries its own
// context, questions to the person come back as input-required results the client answers in a
// next round, and list changes arrive on a subscriptions/listen stream. The server `sdk2` serves
// the example plugin's `count` behind an "ask" row and the conformance fixtures, two per page.
//
// A long call as a task is in sdk_v2_tasks.test.mjs, with the same helpers (sdk_v2_peer.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { VERSION, answerTo, approve, open, sent, sleep, until } from "./sdk_v2_peer.mjs";

for (const kind of ["stdio", "http"]) {
  test(`${kind}: pinned to ${VERSION}, the tools of both plugins are listed page by page`, async (t) => {
    const c = await open(kind);
    t.after(c.close);
    assert.equal(c.client.getNegotiatedProtocolVersion(), VERSION);
    assert.equal(c.client.getServerVersion().name, "toolhost");
    const { tools } = await c.client.listTools();
    const names = tools.map((tool) => tool.name);
    for (const name of ["count", "test_simple_text", "test_custom_headers", "test_input_required_result_elicitation"]) {
      assert.ok(names.includes(name), `${name} is not listed: ${names}`);
    }
    assert.equal(new Set(names).size, names.length, "a tool came twice across pages");
    // Two per page: the client followed nextCursor until the server gave none.
    const lists = sent(c.wire, "tools/list");
    assert.equal(lists.length, Math.ceil(names.length / 2), `tools/list requests: ${lists.length}`);
    assert.equal(lists.filter((m) => m.params?.cursor).length, lists.length - 1);
    for (const m of lists) {
      const answer = answerTo(c.wire, m.id);
      assert.ok(answer.result.tools.length <= 2);
      assert.equal(answer.result.resultType, "complete");
      assert.equal(answer.result.cacheScope, "private");
      assert.equal(m.params._meta["io.modelcontextprotocol/protocolVersion"], VERSION);
    }
    // One page by its cursor: the next two after the first page.
    const page = await c.client.listTools({ cursor: lists[1].params.cursor });
    assert.deepEqual(page.tools.map((tool) => tool.name), names.slice(2, 4));
  });

  test(`${kind}: an ask row is approved through an input-required elicitation and runs with progress; a declined one is refused`, async (t) => {
    const c = await open(kind, { answers: [approve, { action: "decline" }] });
    t.after(c.close);
    const res = await c.client.callTool({ name: "count", arguments: { to: 3, delay_ms: 10 } }, { onprogress: () => {} });
    assert.deepEqual(res.structuredContent, { counted: 3, completed: true });
    assert.equal(c.asked.length, 1);
    assert.match(c.asked[0].message, /Allow count/);
    // On the wire: a first round answered with the question, a second with the answer and the
    // sealed state, and progress on the second round's token, in order, before its result.
    const calls = sent(c.wire, "tools/call");
    assert.equal(calls.length, 2);
    const first = answerTo(c.wire, calls[0].id).result;
    assert.equal(first.resultType, "input_required");
    assert.equal(first.inputRequests.toolhost_approval.method, "elicitation/create");
    assert.equal(calls[1].params.requestState, first.requestState);
    assert.deepEqual(calls[1].params.inputResponses.toolhost_approval, approve);
    const token = calls[1].params._meta.progressToken;
    const progress = c.wire.filter((w) => !w.out && w.m.method === "notifications/progress" &&
                                         w.m.params.progressToken === token).map((w) => w.m.params.progress);
    assert.deepEqual(progress, [1, 2, 3]);
    // stderr is a pipe of its own: its lines may come after the answer.
    await until("the log line of the approval", () => /allowed count \(Count numbers, ask: accepted\)/.test(c.log()));

    const refused = await c.client.callTool({ name: "count", arguments: { to: 3 } });
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /did not allow count/);
    assert.equal(c.asked.length, 2);
    await until("the log line of the refusal", () => /refused count \(Count numbers, ask: decline\)/.test(c.log()));
  });

  test(`${kind}: cancelling a call reaches the plugin, which stops`, async (t) => {
    const c = await open(kind, { answers: [approve] });
    t.after(c.close);
    const ac = new AbortController();
    let steps = 0;
    const call = c.client.callTool({ name: "count", arguments: { to: 100000, delay_ms: 20 } }, {
      signal: ac.signal,
      onprogress: () => {
        if (++steps === 3) ac.abort("enough");
      },
    });
    await assert.rejects(call);
    await until("the host hearing of the cancellation", () => /(client cancelled|went away from) count/.test(c.log()));
    const counted = () => c.wire.filter((w) => !w.out && w.m.method === "notifications/progress").length;
    await sleep(300);
    const after = counted();
    await sleep(500);
    assert.equal(counted(), after, "the plugin went on counting after the cancellation");
    assert.ok(after < 100, `progress messages: ${after}`);
    const next = await c.client.callTool({ name: "test_simple_text", arguments: {} });
    assert.equal(next.content[0].text, "This is a simple text response for testing.");
  });

  test(`${kind}: a prompt that asks the user first renders with the answer; a missing resource is -32602`, async (t) => {
    const c = await open(kind, { answers: [{ action: "accept", content: { context: "the page tables" } }] });
    t.after(c.close);
    const prompt = await c.client.getPrompt({ name: "test_input_required_result_prompt", arguments: {} });
    assert.equal(prompt.messages[0].content.text, "Use this context: the page tables");
    assert.deepEqual(c.asked.map((q) => q.message), ["What context should the prompt use?"]);
    assert.equal(sent(c.wire, "prompts/get").length, 2, "one round for the question, one with the answer");
    await assert.rejects(c.client.readResource({ uri: "test://no-such-resource" }),
                         (e) => e.code === -32602 && /Resource not found/.test(e.message));
  });

  test(`${kind}: a tool list change is seen through subscriptions/listen`, async (t) => {
    const c = await open(kind);
    t.after(c.close);
    const changed = [];
    c.client.setNotificationHandler("notifications/tools/list_changed", (n) => changed.push(n));
    const subscription = await c.client.listen({ toolsListChanged: true });
    assert.deepEqual(subscription.honoredFilter, { toolsListChanged: true });
    await c.client.callTool({ name: "test_trigger_tool_change", arguments: {} });
    await until("notifications/tools/list_changed", () => changed.length > 0);
    const listen = sent(c.wire, "subscriptions/listen")[0];
    assert.equal(changed[0].params._meta["io.modelcontextprotocol/subscriptionId"], listen.id);
    await subscription.close();
    assert.equal(await subscription.closed, "local");
  });
}

test("http: x-mcp-header arguments travel as Mcp-Param-* headers, Base64 when not plain ASCII", async (t) => {
  const c = await open("http");
  t.after(c.close);
  await c.client.listTools();  // the client reads the x-mcp-header annotations from the listing
  const res = await c.client.callTool({ name: "test_custom_headers",
                                        arguments: { region: "Zürich", priority: 7, query: "weather" } });
  assert.equal(res.content[0].text, "Region Zürich, priority 7: weather");
  const call = c.posts.find((h) => h.get("mcp-method") === "tools/call");
  assert.equal(call.get("mcp-param-region"), `=?base64?${Buffer.from("Zürich").toString("base64")}?=`);
  assert.equal(call.get("mcp-param-priority"), "7");
  assert.equal(call.get("mcp-param-query"), null);
  // The empty string is sent encoded (some HTTP stacks drop empty fields), and is still the empty string.
  const empty = await c.client.callTool({ name: "test_custom_headers", arguments: { region: "", priority: 0, query: "q" } });
  assert.equal(empty.content[0].text, "Region , priority 0: q");
  assert.equal(c.posts.filter((h) => h.get("mcp-method") === "tools/call").at(-1).get("mcp-param-region"), "=?base64??=");
});

for (const kind of ["stdio", "http"]) {
  test(`${kind}: in automatic negotiation the client gets ${VERSION}`, async (t) => {
    const c = await open(kind, { mode: "auto" });
    t.after(c.close);
    assert.equal(c.client.getNegotiatedProtocolVersion(), VERSION);
    const res = await c.client.callTool({ name: "test_simple_text", arguments: {} });
    assert.equal(res.content[0].text, "This is a simple text response for testing.");
    assert.equal(sent(c.wire, "initialize").length, 0);
  });
}
