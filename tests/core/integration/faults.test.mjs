// The host's defences against what a plugin (or a client) gets wrong, with the fixture that
// misbehaves on purpose: the privacy filter on every message, bytes that are not UTF-8, NUL
// bytes in arguments, progress tokens, a call that never returns, a plugin that crashes or
// exits, a plugin with 100,000 tools, and worker threads after a burst.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { TOOLHOST, FAULTS_CONFIG, EXAMPLE_CONFIG, connect, sleep } from "./harness.mjs";

const INIT = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {} } };

// toolhost on stdio with raw JSON-RPC lines in and out.
function raw(args, env = {}) {
  const child = spawn(TOOLHOST, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
  const io = { lines: [], err: "", bytes: [] };
  let partial = "";
  child.stdout.on("data", (d) => {
    io.bytes.push(d);
    partial += d.toString("latin1");
    const parts = partial.split("\n");
    partial = parts.pop();
    io.lines.push(...parts.filter(Boolean));
  });
  child.stderr.on("data", (d) => (io.err += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const send = (m) => child.stdin.write((typeof m === "string" ? m : JSON.stringify(m)) + "\n");
  // The first answer to request `id`, parsed (stdout is read as latin1: bytes as they came).
  const answer = async (id, ms = 20000) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      for (const l of io.lines) {
        const m = JSON.parse(Buffer.from(l, "latin1").toString("utf8"));
        if (m.id === id && m.method === undefined) return m;
      }
      await sleep(10);
    }
    throw new Error(`no answer to ${id}; stderr:\n${io.err}`);
  };
  return { child, io, exited, send, answer };
}

test("hide_home_in_paths filters every message a server sends: progress, logs, elicitation, results, keys", async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-home-"));
  const encoded = [...home].map((c) => "%" + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")).join("");
  const asked = [];
  const { client, received } = await connect({
    config: FAULTS_CONFIG,
    server: "faults-private",
    env: { HOME: home },
    capabilities: { elicitation: {} },
    onElicit: (req) => {
      asked.push(req.params.message);
      return { action: "decline" };
    },
  });
  await client.setLoggingLevel("debug");
  const progress = [];
  const res = await client.callTool({ name: "leak_home", arguments: {} }, CallToolResultSchema, {
    onprogress: (p) => progress.push(p),
  });
  const resource = await client.readResource({ uri: "fixture://home" });
  await client.close();

  // Nothing on the wire names the home folder, in any spelling.
  const wire = JSON.stringify(received) + JSON.stringify(asked);
  for (const spelling of [home, encoded, encoded.toLowerCase(), home.replaceAll("/", "\\/")]) {
    assert.ok(!wire.includes(spelling), `${spelling} reached the client: ${wire}`);
  }
  // ... and each kind of message still says what it said, with ~.
  const kinds = new Set(received.map((m) => m.method ?? "result"));
  for (const k of ["notifications/progress", "notifications/message", "elicitation/create", "result"]) {
    assert.ok(kinds.has(k), `no ${k} was sent: ${[...kinds]}`);
  }
  assert.equal(progress[0].message, "reading ~/a.out");
  const log = received.find((m) => m.method === "notifications/message").params;
  assert.equal(log.logger, "~/logger");
  assert.deepEqual(log.data, { "~/key": "opened ~/a.out" });
  assert.deepEqual(asked, ["May I read ~/secret?"]);
  assert.deepEqual(res.structuredContent, { "~/bin": "~", uri: "file://~%2Fa.out" });
  assert.equal(res.content[0].text, 'inside: {"path":"~\\/x"} and ~%2F%79');
  assert.equal(resource.contents[0].text, "the home folder is ~");
  fs.rmSync(home, { recursive: true, force: true });
});

test("bytes that are not UTF-8 are refused from the client and repaired from plugins", async () => {
  const t = raw(["--config", FAULTS_CONFIG]);
  t.send(INIT);
  await t.answer(0);
  // A tool name with a byte that is not UTF-8: a parse error that does not echo it.
  t.child.stdin.write(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x'), Buffer.from([0xff]), Buffer.from('"}}\n')]));
  t.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "bad_utf8", arguments: {}, _meta: { progressToken: "p" } } });
  const result = await t.answer(2);
  t.child.stdin.end();
  await t.exited;
  const all = Buffer.concat(t.io.bytes);
  assert.ok(!all.includes(0xff), "a raw 0xFF byte reached stdout");
  // Every line is valid UTF-8: decoding with fatal set throws on the first bad byte.
  for (const line of all.toString("latin1").split("\n").filter(Boolean)) {
    assert.doesNotThrow(() => new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(line, "latin1")), line);
  }
  const parseError = t.io.lines.map((l) => JSON.parse(l)).find((m) => m.error?.code === -32700);
  assert.match(parseError.error.message, /^Parse error: the message is not valid UTF-8 \(byte \d+\)$/);
  // U+FFFD for each maximal ill-formed part, as Unicode recommends (and TextDecoder does).
  assert.equal(result.result.content[0].text, "surrogate \uFFFD\uFFFD\uFFFD, overlong \uFFFD\uFFFD, end \uFFFD");
  const msgs = t.io.lines.map((l) => JSON.parse(Buffer.from(l, "latin1").toString("utf8")));
  assert.equal(msgs.find((m) => m.method === "notifications/progress").params.message, "half \uFFFD a euro");
  assert.equal(msgs.find((m) => m.method === "notifications/message").params.data, "lone \uFFFD byte");
});

test("a NUL byte in a string argument is refused before the plugin sees a shortened string", async () => {
  const { client } = await connect({ config: FAULTS_CONFIG, server: "faults" });
  const refused = await client.callTool({ name: "echo", arguments: { text: "/tmp/a\u0000b" } });
  assert.equal(refused.isError, true);
  assert.equal(refused.content[0].text, "The argument text contains a NUL byte (\\u0000), which no path, name or command can hold; send it without one.");
  const fine = await client.callTool({ name: "echo", arguments: { text: "/tmp/ab" } });
  assert.deepEqual(fine.structuredContent, { length: 7 });
  await client.close();

  // The debugger's `open` never sees the prefix before the NUL, which exists here.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-nul-"));
  fs.writeFileSync(path.join(dir, "prefix"), "not a dump");
  const dbg = await connect({ config: FAULTS_CONFIG, server: "debugger" });
  const open = await dbg.client.callTool({ name: "open", arguments: { backend: "dump", connect: `${dir}/prefix\u0000.dmp` } });
  assert.equal(open.isError, true);
  assert.match(open.content[0].text, /^The argument connect contains a NUL byte/);
  await dbg.client.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("progress tokens are strings or integers, kept exactly as the client wrote them", async () => {
  const t = raw(["--config", EXAMPLE_CONFIG, "--server", "example"]);
  t.send(INIT);
  await t.answer(0);
  const call = (id, token) =>
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"count","arguments":{"to":1},"_meta":{"progressToken":${token}}}}`;
  t.send(call(1, "1180591620717411303424"));  // 2^70
  t.send(call(2, "1.5"));
  t.send(call(3, '"tok"'));
  t.send(call(4, "-7"));
  t.send(call(5, "true"));
  await Promise.all([1, 2, 3, 4, 5].map((id) => t.answer(id)));
  t.child.stdin.end();
  await t.exited;
  const progressLine = (token) => t.io.lines.find((l) => l.startsWith(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${token},`));
  assert.ok(progressLine("1180591620717411303424"), t.io.lines.join("\n"));
  assert.ok(progressLine('"tok"'));
  assert.ok(progressLine("-7"));
  for (const id of [2, 5]) {
    const m = await t.answer(id);
    assert.equal(m.error.code, -32602);
    assert.equal(m.error.message, "Invalid params: _meta.progressToken must be a string or an integer (MCP's ProgressToken)");
  }
});

test("call_timeout_ms answers a call that never returns, and the calls queued behind it", async () => {
  const { client, stderr } = await connect({ config: FAULTS_CONFIG, server: "faults-timeout" });
  // `hang` runs one call at a time and ignores cancellation: the second waits behind the first.
  const [first, second] = await Promise.all([
    client.callTool({ name: "hang", arguments: {} }),
    client.callTool({ name: "hang", arguments: {} }),
  ]);
  for (const r of [first, second]) {
    assert.equal(r.isError, true);
    assert.equal(r.content[0].text, "The tool hang did not finish within 400 ms (call_timeout_ms of server 'faults-timeout'), so toolhost stopped waiting and asked it to stop. It may still be busy; calls of it that wait their turn meanwhile time out the same way.");
  }
  // The session goes on; a tool with its own longer limit is not cut at 400 ms.
  const echo = await client.callTool({ name: "echo", arguments: { text: "still here" } });
  assert.equal(echo.content[0].text, "still here");
  await client.close();
  assert.match(stderr(), /tool hang \(request \d+\) did not finish within 400 ms; answered with an error and cancelled/);
});

test("call_timeout_ms is a checked key", async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-timeout-")), "t.toml");
  fs.writeFileSync(file, `[servers.t]\nplugins = []\ncall_timeout_ms = "soon"\n`);
  const t = raw(["check-config", "--config", file]);
  const { code } = await t.exited;
  assert.equal(code, 2);
  assert.match(t.io.err, /t\.toml:3:19: servers\.t\.call_timeout_ms: expected an integer/);
});

for (const [how, status] of [["segv", "SIGSEGV"], ["abort", "SIGABRT"], ["exit0", 70], ["quick_exit0", 70]]) {
  test(`a plugin that dies (${how}) during a call is named in the log, and toolhost never exits 0 for it`, async () => {
    const t = raw(["--config", FAULTS_CONFIG, "--server", "faults"]);
    t.send(INIT);
    await t.answer(0);
    t.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "die", arguments: { how } } });
    const { code, signal } = await t.exited;
    if (typeof status === "number") {
      assert.equal(code, status);
      assert.match(t.io.err, /toolhost: error: fault: tool 'die' of plugin 'fixture-faults' \(server 'faults'\) called exit\(\) while calls were running, which would look like a clean exit; toolhost stops with status 70 instead\./);
    } else {
      assert.equal(signal, status);
      assert.match(t.io.err, new RegExp(`toolhost: error: fault: ${status} \\(signal \\d+\\) in tool 'die' of plugin 'fixture-faults' \\(server 'faults'\\); toolhost stops`));
    }
  });
}

test("a handler that throws answers the client with the exception and logs it to stderr", async () => {
  const t = raw(["--config", FAULTS_CONFIG, "--server", "faults"]);
  t.send(INIT);
  await t.answer(0);
  t.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "die", arguments: { how: "throw" } } });
  const r = await t.answer(1);
  assert.equal(r.result.isError, true);
  assert.equal(r.result.content[0].text, "die failed: the fixture threw on purpose");
  t.child.stdin.end();
  await t.exited;
  assert.match(t.io.err, /error: .*tool die threw an exception: the fixture threw on purpose/);
});

test("a plugin with 100,000 tools lists its first page at once", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-many-"));
  const config = path.join(dir, "many.toml");
  fs.writeFileSync(config, `plugin_dirs = [${JSON.stringify(process.env.FIXTURE_DIR)}]\n[servers.many]\nplugins = ["fixture-faults"]\n[servers.many.settings.fixture-faults]\ntools = 100000\n`);
  const t = raw(["--config", config, "--server", "many"]);
  t.send(INIT);
  await t.answer(0);
  t.send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  // Registering them was quadratic (30 s); a generous bound that only a quadratic step misses.
  const page = await t.answer(1, 15000);
  assert.equal(page.result.tools.length, 100);
  assert.equal(page.result.tools[0].name, "many_0");
  t.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "many_99999", arguments: { text: "last" } } });
  assert.equal((await t.answer(2)).result.content[0].text, "last");
  t.child.stdin.end();
  await t.exited;
  fs.rmSync(dir, { recursive: true, force: true });
});

test("worker threads end soon after a burst of calls", async () => {
  const t = raw(["--config", EXAMPLE_CONFIG, "--server", "example"]);
  t.send(INIT);
  await t.answer(0);
  const threads = () => fs.readdirSync(`/proc/${t.child.pid}/task`).length;
  const idle = threads();
  for (let i = 1; i <= 200; i++) {
    t.send({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "count", arguments: { to: 2, delay_ms: 300 } } });
  }
  await t.answer(200);
  let peak = 0;
  for (let i = 1; i <= 200; i++) await t.answer(i);
  peak = Math.max(peak, threads());
  // The burst needed a thread per call; they go once idle (within 5 s), not after 30 s.
  let now = threads();
  const end = Date.now() + 10000;
  while (now > idle + 2 && Date.now() < end) {
    await sleep(200);
    now = threads();
  }
  t.child.stdin.end();
  await t.exited;
  assert.ok(now <= idle + 2, `${now} threads 10 s after the burst (idle: ${idle}, peak ${peak})`);
});
