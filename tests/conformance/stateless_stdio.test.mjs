// 2026-07-28 over stdio (the conformance suite drives HTTP only): a request with _meta is served
// statelessly on the same process that could also be initialized, with the era's result fields
// and errors; a request without _meta still needs initialize.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import readline from "node:readline";

const META = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };

test("2026-07-28 requests over stdio: discover, a call, a removed method, an undeclared capability, an unsupported version", async () => {
  const child = spawn(process.env.TOOLHOST, ["--config", process.env.HTTP_TEST_CONFIG, "--server", "conformance"],
                      { stdio: ["pipe", "pipe", "ignore"] });
  const answers = new Map();
  const waiting = new Map();
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    const m = JSON.parse(line);
    if (m.id === undefined) return;
    if (waiting.has(m.id)) waiting.get(m.id)(m);
    else answers.set(m.id, m);
  });
  const ask = (id, method, params) => {
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    return answers.has(id) ? Promise.resolve(answers.get(id)) : new Promise((r) => waiting.set(id, r));
  };
  try {
    const discover = await ask(1, "server/discover", { _meta: META });
    assert.equal(discover.result.resultType, "complete");
    assert.deepEqual(discover.result.supportedVersions, ["2026-07-28"]);
    assert.ok(discover.result.capabilities.tools);
    assert.equal(discover.result._meta["io.modelcontextprotocol/serverInfo"].name, "toolhost");

    const call = await ask(2, "tools/call", { name: "test_simple_text", arguments: {}, _meta: META });
    assert.equal(call.result.resultType, "complete");
    assert.equal(call.result.content[0].text, "This is a simple text response for testing.");

    const list = await ask(3, "tools/list", { _meta: META });
    assert.equal(list.result.cacheScope, "private");
    assert.ok(Number.isInteger(list.result.ttlMs));

    const ping = await ask(4, "ping", { _meta: META });
    assert.equal(ping.error.code, -32601);

    const missing = await ask(5, "tools/call", { name: "test_missing_capability", arguments: {}, _meta: META });
    assert.equal(missing.error.code, -32021);
    assert.deepEqual(missing.error.data.requiredCapabilities, { sampling: {} });

    const old = await ask(6, "tools/list", { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "1999-01-01" } });
    assert.equal(old.error.code, -32022);
    assert.deepEqual(old.error.data, { supported: ["2026-07-28"], requested: "1999-01-01" });

    // The same process still speaks the initialize era to a request without _meta.
    const legacy = await ask(7, "tools/list", {});
    assert.equal(legacy.error.code, -32600);
    assert.match(legacy.error.message, /initialize/);
  } finally {
    child.kill("SIGTERM");
  }
});
