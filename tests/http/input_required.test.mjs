// 2026-07-28 over Streamable HTTP: a permission row set to `ask` does not become a request to the
// client but an input-required result (MRTR) whose requestState the client must send back with
// the answer. The host seals that state: an approval counts only for the call it was asked for,
// only once, and a state the client changed is refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startHttp, stop } from "./http_server.mjs";

const VERSION = "2026-07-28";
const meta = (capabilities) => ({ "io.modelcontextprotocol/protocolVersion": VERSION,
                                  "io.modelcontextprotocol/clientCapabilities": capabilities });

async function call(url, id, params) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
               "MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": params.name },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params }),
  });
  const text = await res.text();
  // One JSON answer, or an SSE stream whose last data line is the answer.
  const json = text.startsWith("{") ? text : text.split("\n").filter((l) => l.startsWith("data: ")).pop().slice(6);
  return JSON.parse(json);
}

test("an ask row: input-required elicitation, approved and declined, sealed requestState", async () => {
  const server = await startHttp(["--server", "example-ask"]);
  try {
    const caps = { elicitation: {} };
    const args = { to: 2 };
    const first = await call(server.url, 1, { name: "count", arguments: args, _meta: meta(caps) });
    assert.equal(first.result.resultType, "input_required", JSON.stringify(first));
    const question = first.result.inputRequests.toolhost_approval;
    assert.equal(question.method, "elicitation/create");
    assert.match(question.params.message, /count/);
    assert.ok(question.params.requestedSchema.properties.approve);
    const state = first.result.requestState;
    assert.equal(typeof state, "string");

    const approve = { toolhost_approval: { action: "accept", content: { approve: true } } };
    const approved = await call(server.url, 2, { name: "count", arguments: args, _meta: meta(caps),
                                                 inputResponses: approve, requestState: state });
    assert.equal(approved.result.resultType, "complete", JSON.stringify(approved));
    assert.notEqual(approved.result.isError, true, JSON.stringify(approved));
    assert.equal(approved.result.structuredContent.counted, 2);

    // The state answered one round: sent again (a replay of the approval), it is refused, and
    // the call does not run a second time on one "yes".
    const replayed = await call(server.url, 8, { name: "count", arguments: args, _meta: meta(caps),
                                                 inputResponses: approve, requestState: state });
    assert.equal(replayed.error?.code, -32602, JSON.stringify(replayed));
    assert.match(replayed.error.message, /used already/);

    const again = await call(server.url, 9, { name: "count", arguments: args, _meta: meta(caps) });
    const declined = await call(server.url, 3, { name: "count", arguments: args, _meta: meta(caps),
      inputResponses: { toolhost_approval: { action: "decline" } }, requestState: again.result.requestState });
    assert.equal(declined.result.isError, true, JSON.stringify(declined));
    assert.equal(declined.result.structuredContent, undefined);

    // An answer without the state it belongs to is not read: the question comes again.
    const unsealed = await call(server.url, 4, { name: "count", arguments: args, _meta: meta(caps), inputResponses: approve });
    assert.equal(unsealed.result.resultType, "input_required");

    // The approval was for { to: 2 }; with other arguments the state is refused.
    const other = await call(server.url, 5, { name: "count", arguments: { to: 1000 }, _meta: meta(caps),
                                              inputResponses: approve, requestState: state });
    assert.equal(other.error.code, -32602);
    assert.match(other.error.message, /another call/);

    // A changed state fails its integrity check.
    const [payload, tag] = state.split(".");
    const forged = Buffer.from(payload, "base64url").toString().replace(/"k":\[/, '"k":["extra",');
    const tampered = await call(server.url, 6, { name: "count", arguments: args, _meta: meta(caps), inputResponses: approve,
                                                 requestState: `${Buffer.from(forged).toString("base64url")}.${tag}` });
    assert.equal(tampered.error.code, -32602);
    assert.match(tampered.error.message, /integrity/);

    // A client that cannot ask the person is told which capability the call needs.
    const unable = await call(server.url, 7, { name: "count", arguments: args, _meta: meta({}) });
    assert.equal(unable.error.code, -32021);
    assert.deepEqual(unable.error.data.requiredCapabilities, { elicitation: {} });
  } finally {
    await stop(server);
  }
});
