// rea-filter in front of a 2026-07-28 upstream: a second toolhost (the example plugin's count
// behind an "ask" row, and the conformance fixtures), over stdio and over Streamable HTTP, with
// a 2026-07-28 client (the official @modelcontextprotocol/client 2.x, pinned) and a 2025-11-25
// client (@modelcontextprotocol/sdk 1.x) in front. The upstream's question (count's approval)
// comes to the proxy as an input-required result and reaches each client the way its era asks:
// an input-required result of the front host's own for the 2026-07-28 client, an
// elicitation/create request for the 2025-11-25 one. And the proxy speaks 2025-11-25 to
// server-everything, which refuses server/discover.
//
// The stdio upstreams run under wire_tap.mjs, whose record says what the proxy sent them; the
// HTTP upstream's can be reached through a tap of its own (headerTap) that records each POST's
// headers.
import { test, after, before } from "node:test";
import { createServer, request as httpRequest } from "node:http";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client as Client2026 } from "@modelcontextprotocol/client";
import { StdioClientTransport as Stdio2026 } from "@modelcontextprotocol/client/stdio";
import { Client as Client2025 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as Stdio2025 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema, ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp, stop } from "../http/http_server.mjs";
import { toolhostEnv } from "../toolhost_env.mjs";

const TOOLHOST = process.env.TOOLHOST;
const UPSTREAM_CONFIG = process.env.HTTP_TEST_CONFIG;  // the upstream toolhost's (startHttp reads it too)
const PLUGIN_DIR = process.env.REA_PLUGIN_DIR;
const NODE = process.env.REA_NODE;
const EVERYTHING = process.env.REA_EVERYTHING;
assert.ok(TOOLHOST && UPSTREAM_CONFIG && PLUGIN_DIR && NODE && EVERYTHING, "TOOLHOST, HTTP_TEST_CONFIG, REA_PLUGIN_DIR, REA_NODE, REA_EVERYTHING");
const tap = join(dirname(fileURLToPath(import.meta.url)), "wire_tap.mjs");
const work = mkdtempSync(join(tmpdir(), "rea-filter-26-"));
const config = join(work, "toolhost.toml");
const q = JSON.stringify;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let httpUpstream;

before(async () => {
  httpUpstream = await startHttp(["--server", "up", "--log-level", "debug"]);
});
after(async () => {
  if (httpUpstream) await stop(httpUpstream);
  rmSync(work, { recursive: true, force: true });
});

// One front server per test, so that each has an upstream (and a wire record) of its own.
let servers = 0;
function frontServer(upstream, url) {
  const name = `front${++servers}`;
  const wire = join(work, `${name}.jsonl`);
  let setting;
  if (upstream === "http") {
    setting = `url = ${q(url ?? httpUpstream.url)}`;
  } else if (upstream === "everything") {
    setting = `command = [${[NODE, tap, wire, NODE, EVERYTHING, "stdio"].map(q).join(", ")}]`;
  } else {
    setting = `command = [${[NODE, tap, wire, TOOLHOST, "--config", UPSTREAM_CONFIG, "--server", "up", "--log-level", "debug"].map(q).join(", ")}]`;
  }
  const head = servers === 1 ? "" : readFileSync(config, "utf8");
  writeFileSync(config, (head || `plugin_dirs = [${q(PLUGIN_DIR)}]\n[permissions]\n"rea.read" = "allow"\n"run" = "allow"\n`) + `
[servers.${name}]
plugins = ["rea-filter"]
[servers.${name}.settings.rea-filter]
${setting}
instructions_wait_ms = 30000
`);
  return { name, wire };
}

// The front toolhost with a client of `era` ("2026-07-28" or "2025-11-25") in front. `answers`
// are what the person says to each question, in turn.
async function open(era, upstream, { answers = [], url } = {}) {
  const { name, wire } = frontServer(upstream, url);
  const args = ["--config", config, "--server", name, "--log-level", "debug"];
  const asked = [];
  const answer = async (req) => {
    asked.push(req.params);
    return answers.shift() ?? { action: "cancel" };
  };
  let client;
  let transport;
  if (era === "2026-07-28") {
    transport = new Stdio2026({ command: TOOLHOST, args, env: toolhostEnv(), stderr: "pipe" });
    client = new Client2026({ name: "rea-filter-26-test", version: "1.0.0" },
                            { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: era } } });
    client.setRequestHandler("elicitation/create", answer);
  } else {
    transport = new Stdio2025({ command: TOOLHOST, args, env: toolhostEnv(), stderr: "pipe" });
    client = new Client2025({ name: "rea-filter-26-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, answer);
  }
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  await client.connect(transport);
  const front = [];  // what the front host sent the client
  const deliver = transport.onmessage;
  transport.onmessage = (m, extra) => {
    front.push(m);
    deliver?.(m, extra);
  };
  const call = (params, options = {}) =>
    era === "2026-07-28" ? client.callTool(params, options) : client.callTool(params, CallToolResultSchema, options);
  // The front's stderr carries the stdio upstream's too (the proxy copies it).
  const log = () => (upstream === "http" ? stderr + httpUpstream.stderr() : stderr);
  const upstreamLog = () => (upstream === "http" ? httpUpstream.stderr() : "");
  // The record of the last upstream started: the SDK 2.x stdio client starts its server twice
  // when pinned (each toolhost starts an upstream of its own), and talks to the second.
  const sent = () => {
    const all = existsSync(wire) ? readFileSync(wire, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
    return all.filter((e) => e.pid === all.at(-1)?.pid);
  };
  return { client, call, asked, front, log, upstreamLog, frontLog: () => stderr, sent, close: () => client.close() };
}

// An HTTP hop in front of the HTTP upstream that records the headers of every POST (lower-case
// names, as Node gives them) and passes the exchange on unchanged, streams included.
async function headerTap(target, { annotationsFrom } = {}) {
  const posts = [];
  const to = new URL(target);
  // With `annotationsFrom` (a tool name), the upstream's tools change when that tool is first
  // called: until then each tools/list answer goes out without its x-mcp-header annotations, as
  // from a server that added them after the client listed.
  let changed = !annotationsFrom;
  const strip = (body) => {
    const message = JSON.parse(body);
    for (const tool of message.result?.tools ?? []) {
      for (const property of Object.values(tool.inputSchema?.properties ?? {})) delete property["x-mcp-header"];
    }
    return JSON.stringify(message);
  };
  const server = createServer((req, res) => {
    posts.push(req.headers);
    if (req.headers["mcp-method"] === "tools/call" && req.headers["mcp-name"] === annotationsFrom) changed = true;
    const rewrite = !changed && req.headers["mcp-method"] === "tools/list";
    const out = httpRequest({ host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
      if (!rewrite || !String(up.headers["content-type"]).startsWith("application/json")) {
        res.writeHead(up.statusCode, up.headers);
        return up.pipe(res);
      }
      let body = "";
      up.setEncoding("utf8");
      up.on("data", (d) => (body += d));
      up.on("end", () => {
        const text = strip(body);
        res.writeHead(up.statusCode, { ...up.headers, "content-length": Buffer.byteLength(text) });
        res.end(text);
      });
    });
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}${to.pathname}`, posts, close: () => {
    server.closeAllConnections();
    server.close();
  } };
}

async function until(what, check, ms = 15000) {
  for (let waited = 0; waited < ms; waited += 25) {
    if (check()) return;
    await sleep(25);
  }
  assert.fail(`${what} did not happen within ${ms} ms`);
}

const approve = { action: "accept", content: { approve: true } };
const toUpstream = (c, method) => c.sent().filter((e) => e.to?.method === method).map((e) => e.to);
const fromUpstream = (c, id) => c.sent().find((e) => e.from && e.from.id === id && !e.from.method)?.from;

for (const upstream of ["stdio", "http"]) {
  for (const era of ["2026-07-28", "2025-11-25"]) {
    test(`${era} client, ${upstream} toolhost upstream: tools listed, a call, the upstream's ask answered with progress, a decline refused`, async (t) => {
      const c = await open(era, upstream, { answers: [approve, { action: "decline" }] });
      t.after(c.close);
      const { tools } = await c.client.listTools();
      const names = tools.map((tool) => tool.name);
      for (const name of ["count", "test_simple_text", "test_trigger_tool_change"]) assert.ok(names.includes(name), `${name} missing: ${names}\n${c.log()}`);
      const text = await c.call({ name: "test_simple_text", arguments: {} });
      assert.equal(text.content[0].text, "This is a simple text response for testing.");

      const counted = await c.call({ name: "count", arguments: { to: 3, delay_ms: 10 } }, { onprogress: () => {} });
      assert.deepEqual(counted.structuredContent, { counted: 3, completed: true });
      // The upstream's progress, on the wire to the client before the result, in order.
      const progress = c.front.filter((m) => m.method === "notifications/progress").map((m) => [m.params.progress, m.params.message]);
      assert.deepEqual(progress, [[1, "counted to 1"], [2, "counted to 2"], [3, "counted to 3"]]);
      assert.equal(c.asked.length, 1);
      assert.match(c.asked[0].message, /Allow count/);
      if (era === "2026-07-28") {
        // The front host asked with an input-required result of its own, under the upstream's key.
        const round = c.front.find((m) => m.result?.resultType === "input_required");
        assert.deepEqual(Object.keys(round.result.inputRequests), ["upstream.toolhost_approval"]);
      } else {
        assert.ok(c.front.some((m) => m.method === "elicitation/create"), "the 2025-11-25 client was asked with a request");
      }
      await until("the upstream's log line of the approval", () => /allowed count \(Count numbers, ask: accepted\) in server up/.test(c.log()));
      // Round trips to the upstream for the approved count: its question, then the answer; a
      // 2026-07-28 client's first round (which ends with the question) calls the upstream once more.
      if (upstream === "stdio") {
        const counts = toUpstream(c, "tools/call").filter((m) => m.params.name === "count").length;
        assert.equal(counts, era === "2026-07-28" ? 3 : 2);
      }

      const refused = await c.call({ name: "count", arguments: { to: 3 } });
      assert.equal(refused.isError, true);
      assert.match(refused.content[0].text, /did not allow count/);
      assert.equal(c.asked.length, 2);
      await until("the upstream's log line of the refusal", () => /refused count \(Count numbers, ask: decline\) in server up/.test(c.log()));
      // The proxy says which revision it speaks, and the upstream never saw initialize.
      assert.match(c.frontLog(), /speaks MCP 2026-07-28 \(it answered server\/discover\)/);
      assert.doesNotMatch(c.upstreamLog(), /initialized with protocol/);

      if (upstream === "stdio") {
        const wire = c.sent().filter((e) => e.to);
        assert.equal(wire[0].to.method, "server/discover");
        assert.equal(toUpstream(c, "initialize").length, 0);
        const calls = toUpstream(c, "tools/call");
        for (const m of calls) assert.equal(m.params._meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        // The approved count: a first round answered input_required, then the retry with the
        // upstream's requestState unchanged and the person's answer under the upstream's key.
        const retry = calls.find((m) => m.params.name === "count" && m.params.requestState);
        const firstRound = calls.filter((m) => m.params.name === "count" && m.id < retry.id).pop();
        assert.equal(retry.params.requestState, fromUpstream(c, firstRound.id).result.requestState);
        assert.deepEqual(retry.params.inputResponses, { toolhost_approval: approve });
      }
    });

    test(`${era} client, ${upstream} toolhost upstream: cancelling a proxied call reaches the upstream's plugin`, async (t) => {
      const c = await open(era, upstream, { answers: [approve] });
      t.after(c.close);
      // 2026-07-28: notifications/cancelled on stdio; over HTTP the proxy closes the call's stream.
      // (The HTTP upstream serves every test: count its lines from before this one.)
      const heard = upstream === "http" ? /the client went away from count/g : /client cancelled count/g;
      const earlier = (c.log().match(heard) ?? []).length;
      const ac = new AbortController();
      let steps = 0;
      const call = c.call({ name: "count", arguments: { to: 100000, delay_ms: 20 } }, {
        signal: ac.signal,
        onprogress: () => {
          if (++steps === 3) ac.abort("enough");
        },
      });
      await assert.rejects(call);
      await until("the upstream hearing of the cancellation", () => (c.log().match(heard) ?? []).length > earlier);
      if (upstream === "stdio") {
        const running = toUpstream(c, "tools/call").filter((m) => m.params.name === "count").pop();
        assert.ok(toUpstream(c, "notifications/cancelled").some((m) => m.params.requestId === running.id));
      }
      const next = await c.call({ name: "test_simple_text", arguments: {} });
      assert.equal(next.content[0].text, "This is a simple text response for testing.");
    });

    test(`${era} client, ${upstream} toolhost upstream: a tool list change upstream reaches the client`, async (t) => {
      const c = await open(era, upstream);
      t.after(c.close);
      const changed = [];
      let subscription;
      if (era === "2026-07-28") {
        c.client.setNotificationHandler("notifications/tools/list_changed", (n) => changed.push(n));
        subscription = await c.client.listen({ toolsListChanged: true });
      } else {
        c.client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changed.push(n));
      }
      await c.client.listTools();
      await c.call({ name: "test_trigger_tool_change", arguments: {} });
      await until("notifications/tools/list_changed", () => changed.length > 0).catch((e) => {
        throw new Error(`${e.message}\n${JSON.stringify(c.front)}\n${c.log()}`);
      });
      if (upstream === "stdio") assert.equal(toUpstream(c, "subscriptions/listen").length, 1);
      await subscription?.close();
    });
  }
}

for (const era of ["2026-07-28", "2025-11-25"]) {
  // The upstream toolhost checks the Mcp-Param-* headers of a call to test_custom_headers against
  // its x-mcp-header arguments (region, priority) and refuses a call without them (-32020).
  test(`${era} client, http toolhost upstream: a tool's x-mcp-header arguments travel as Mcp-Param-* headers`, async (t) => {
    const tap = await headerTap(httpUpstream.url);
    t.after(tap.close);
    const c = await open(era, "http", { url: tap.url });
    t.after(c.close);
    const { tools } = await c.client.listTools();
    const listed = tools.find((tool) => tool.name === "test_custom_headers");
    assert.equal(listed?.inputSchema.properties.region["x-mcp-header"], "Region", c.log());
    const calls = () => tap.posts.filter((h) => h["mcp-method"] === "tools/call" && h["mcp-name"] === "test_custom_headers");
    for (const [region, sent] of [["us-west1", "us-west1"], ["Zürich", `=?base64?${Buffer.from("Zürich").toString("base64")}?=`],
                                  [" padded ", `=?base64?${Buffer.from(" padded ").toString("base64")}?=`]]) {
      const res = await c.call({ name: "test_custom_headers", arguments: { region, priority: 7, query: "weather" } });
      assert.equal(res.isError, undefined, JSON.stringify(res));
      assert.equal(res.content[0].text, `Region ${region}, priority 7: weather`);
      const headers = calls().at(-1);
      assert.equal(headers["mcp-param-region"], sent);
      assert.equal(headers["mcp-param-priority"], "7");
      assert.equal(headers["mcp-param-query"], undefined);
    }
  });

  test(`${era} client, http toolhost upstream: a call refused with -32020 because the upstream's tools changed is retried once, after listing them again`, async (t) => {
    const tap = await headerTap(httpUpstream.url, { annotationsFrom: "test_custom_headers" });
    t.after(tap.close);
    const c = await open(era, "http", { url: tap.url });
    t.after(c.close);
    const { tools } = await c.client.listTools();
    assert.ok(tools.some((tool) => tool.name === "test_custom_headers"), c.log());
    const res = await c.call({ name: "test_custom_headers", arguments: { region: "us-west1", priority: 7, query: "weather" } });
    assert.equal(res.isError, undefined, JSON.stringify(res) + c.log());
    assert.equal(res.content[0].text, "Region us-west1, priority 7: weather");
    // The first attempt had no headers (the listing had no annotations) and was refused; then a
    // new listing, and the second attempt carried them.
    const methods = tap.posts.map((h) => h["mcp-method"]);
    const first = methods.findIndex((m, i) => m === "tools/call" && tap.posts[i]["mcp-name"] === "test_custom_headers");
    const attempts = tap.posts.filter((h) => h["mcp-method"] === "tools/call" && h["mcp-name"] === "test_custom_headers");
    assert.equal(attempts.length, 2, JSON.stringify(methods));
    assert.equal(attempts[0]["mcp-param-region"], undefined);
    assert.equal(attempts[1]["mcp-param-region"], "us-west1");
    assert.equal(attempts[1]["mcp-param-priority"], "7");
    assert.ok(methods.slice(first + 1).includes("tools/list"), JSON.stringify(methods));
  });

  test(`${era} client: a prompt the 2026-07-28 upstream renders after a question; a resource it lacks is not found in the client's era`, async (t) => {
    const c = await open(era, "stdio", { answers: [{ action: "accept", content: { context: "the page tables" } }] });
    t.after(c.close);
    const prompt = await c.client.getPrompt({ name: "test_input_required_result_prompt", arguments: {} });
    assert.equal(prompt.messages[0].content.text, "Use this context: the page tables");
    assert.deepEqual(c.asked.map((q) => q.message), ["What context should the prompt use?"]);

    const text = await c.client.readResource({ uri: "test://static-text" });
    assert.ok(text.contents[0].text.length > 0);
    // 2026-07-28 says -32602, earlier revisions -32002.
    const code = era === "2026-07-28" ? -32602 : -32002;
    await assert.rejects(c.client.readResource({ uri: "test://no-such-resource" }),
                         (e) => e.code === code && /Resource not found/.test(e.message));
  });
}

test("the 2026-07-28 upstream's log messages reach a 2025-11-25 client, as a 2025 upstream's do", async (t) => {
  const c = await open("2025-11-25", "stdio");
  t.after(c.close);
  await c.call({ name: "test_tool_with_logging", arguments: {} });
  await until("three log messages", () => c.front.filter((m) => m.method === "notifications/message").length >= 3);
  assert.equal(toUpstream(c, "tools/call").at(-1).params._meta["io.modelcontextprotocol/logLevel"], "info");
});

test("server-everything refuses server/discover, and the proxy speaks 2025-11-25 to it", async (t) => {
  const c = await open("2026-07-28", "everything");
  t.after(c.close);
  const res = await c.call({ name: "echo", arguments: { message: "old and new" } });
  assert.equal(res.content[0].text, "Echo: old and new");
  const wire = c.sent();
  const discover = wire.find((e) => e.to?.method === "server/discover").to;
  assert.ok("error" in fromUpstream(c, discover.id), "server-everything answered server/discover with a result");
  const init = toUpstream(c, "initialize")[0];
  assert.equal(init.params.protocolVersion, "2025-11-25");
  assert.equal(fromUpstream(c, init.id).result.protocolVersion, "2025-11-25");
  for (const m of toUpstream(c, "tools/call")) assert.equal(m.params._meta?.["io.modelcontextprotocol/protocolVersion"], undefined);
  assert.match(c.frontLog(), /speaks MCP 2025-11-25 \(it answered server\/discover with an error/);
});
