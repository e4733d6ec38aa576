// rea-filter through the toolhost executable, driven by the official TypeScript SDK client.
//
//   node proxy.test.mjs TOOLHOST PLUGIN_DIR NODE SERVER_EVERYTHING
//
// Upstreams: the real @modelcontextprotocol/server-everything, and upstream.mjs (the official
// SDK server) for what server-everything cannot show: REA's tool names, and a record of the
// cancellations that reached it.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { spawn } from "node:child_process";
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema,
  LoggingMessageNotificationSchema, ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [toolhost, pluginDir, node, everything, group = "all"] = process.argv.slice(2);
// Three groups, so that ctest names them apart: "calls" (everything that goes to the upstream),
// "denied" (calls of hidden tools, which the host must route to the provider although the
// provider does not list them, as plugin.h says) and "check" (check-config, an upstream that
// cannot start, and what comes first on stdout while one is starting).
const only = (name) => ({ skip: group !== "all" && group !== name ? `not in group ${group}` : false });
assert.ok(toolhost && pluginDir && node && everything, "usage: proxy.test.mjs TOOLHOST PLUGIN_DIR NODE SERVER_EVERYTHING");
const upstream = join(dirname(fileURLToPath(import.meta.url)), "upstream.mjs");
const work = mkdtempSync(join(tmpdir(), "rea-filter-it-"));
const probeLog = join(work, "probe.jsonl");
const reaLog = join(work, "rea.jsonl");
const idaLog = join(work, "ida.jsonl");
// An IDA MCP plugin's config in the usual mcpServers form; the ida server finds it through
// REA_IDA_MCP_CONFIG, as Eleven does.
const idaConfig = join(work, "ida-mcp.json");
writeFileSync(idaConfig, JSON.stringify({ mcpServers: { "ida-pro-mcp": { command: node, args: [upstream, "probe"], env: { UPSTREAM_LOG: idaLog } } } }));
const q = JSON.stringify;

writeFileSync(join(work, "toolhost.toml"), `
plugin_dirs = [${q(pluginDir)}]
default_server = "everything"
[permissions]
"rea.read" = "allow"
"run" = "allow"

[servers.everything]
description = "server-everything behind rea-filter"
plugins = ["rea-filter"]
[servers.everything.settings.rea-filter]
command = [${q(node)}, ${q(everything)}, "stdio"]
instructions_wait_ms = 30000
deny = ["get-env", "get-tiny-image"]
use_instead = { "get-env" = "echo" }

[servers.probe]
description = "the probe upstream"
plugins = ["rea-filter"]
[servers.probe.settings.rea-filter]
command = [${q(node)}, ${q(upstream)}, "probe"]
env = { UPSTREAM_LOG = ${q(probeLog)} }

[servers.ida]
description = "the IDA MCP plugin named by REA_IDA_MCP_CONFIG"
plugins = ["rea-filter"]

[servers.eleven-rea]
description = "REA's tool names behind the eleven-rea filter"
plugins = ["rea-filter"]
[servers.eleven-rea.settings.rea-filter]
command = [${q(node)}, ${q(upstream)}, "rea"]
env = { UPSTREAM_LOG = ${q(reaLog)} }
`);

const clients = [];
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  rmSync(work, { recursive: true, force: true });
});

async function connect(server) {
  const client = new Client({ name: "rea-filter-test", version: "1.0.0" },
                            { capabilities: { elicitation: { form: {} }, sampling: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada Lovelace" } }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    model: "test-model", role: "assistant", content: { type: "text", text: "sampled by the test client" } }));
  const transport = new StdioClientTransport({ command: toolhost, args: ["--config", join(work, "toolhost.toml"), "--server", server],
                                               env: { ...process.env, REA_IDA_MCP_CONFIG: idaConfig }, stderr: "pipe" });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

async function toolNames(client) {
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}

const textOf = (result) => result.content.map((c) => c.text ?? "").join("\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, check, ms = 15000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}
const recorded = (file) => existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];

// The upstream processes toolhost started: its children (toolhost itself runs no other).
function childrenOf(pid) {
  const out = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
    if (text) out.push(...text.split(/\s+/).map(Number));
  }
  return out;
}

// The upstream servers toolhost started: its children that are not toolhost, looking through the
// plugin's own process when rea-filter runs isolated (TOOLHOST_ISOLATION=process).
function upstreamsOf(pid) {
  const out = [];
  for (const child of childrenOf(pid)) {
    const argv = readFileSync(`/proc/${child}/cmdline`, "utf8").split("\0");
    if (argv.includes("--plugin-child=3")) out.push(...upstreamsOf(child));
    else out.push(child);
  }
  return out;
}

test("server-everything's tools appear through the proxy, except the denied ones", only("calls"), async () => {
  const { client } = await connect("everything");
  const upstreamInstructions = readFileSync(join(dirname(everything), "docs", "instructions.md"), "utf8").trim();
  assert.ok(client.getInstructions()?.includes(upstreamInstructions.split("\n")[0]), "the upstream's instructions are passed on");
  const names = await toolNames(client);
  for (const name of ["echo", "get-sum", "trigger-long-running-operation", "trigger-elicitation-request", "trigger-sampling-request"]) {
    assert.ok(names.includes(name), `${name} is listed`);
  }
  assert.ok(!names.includes("get-env"), "get-env is hidden");
  assert.ok(!names.includes("get-tiny-image"), "get-tiny-image is hidden");
  const echo = (await client.listTools()).tools.find((t) => t.name === "echo");
  assert.equal(echo.description, "Echoes back the input string");
  const result = await client.callTool({ name: "echo", arguments: { message: "through the proxy" } });
  assert.equal(textOf(result), "Echo: through the proxy");
});

test("a denied tool's call returns the configured use-instead message", only("denied"), async () => {
  const { client } = await connect("everything");
  const result = await client.callTool({ name: "get-env", arguments: {} });
  assert.equal(result.isError, true);
  assert.equal(textOf(result), "get-env is not available here. Use the `eleven` server's `echo` tool instead.");
  const plain = await client.callTool({ name: "get-tiny-image", arguments: {} });
  assert.equal(plain.isError, true);
  assert.equal(textOf(plain), "get-tiny-image is turned off for this server by its configuration.");
});

test("resources, templates, prompts and completions pass through with the upstream's own descriptions", only("calls"), async () => {
  const { client } = await connect("everything");
  const resources = (await client.listResources()).resources;
  assert.ok(resources.length > 0, "server-everything lists resources");
  const first = resources[0];
  const read = await client.readResource({ uri: first.uri });
  assert.equal(read.contents[0].uri, first.uri);
  const templates = (await client.listResourceTemplates()).resourceTemplates;
  const dynamicText = templates.find((t) => t.uriTemplate.startsWith("demo://resource/dynamic/text/"));
  assert.ok(dynamicText, "the dynamic text template is listed");
  const viaTemplate = await client.readResource({ uri: "demo://resource/dynamic/text/7" });
  assert.equal(viaTemplate.contents[0].uri, "demo://resource/dynamic/text/7");

  const prompts = (await client.listPrompts()).prompts;
  const args = prompts.find((p) => p.name === "args-prompt");
  assert.equal(args.description, "A prompt with two arguments, one required and one optional");
  const rendered = await client.getPrompt({ name: "args-prompt", arguments: { city: "Lyon", state: "Rhone" } });
  assert.equal(rendered.messages[0].content.text, "What's weather in Lyon, Rhone?");
  const done = await client.complete({ ref: { type: "ref/prompt", name: "completable-prompt" },
                                       argument: { name: "department", value: "S" } });
  assert.deepEqual(done.completion.values, ["Sales", "Support"]);
});

test("the long-running operation's progress reaches the client", only("calls"), async () => {
  const { client, transport } = await connect("everything");
  // What toolhost wrote, in order, as the client's transport received it.
  const wire = [];
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    wire.push(message);
    deliver(message, extra);
  };
  const seen = [];
  const result = await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } },
                                       CallToolResultSchema, { onprogress: (p) => seen.push(p) });
  assert.match(textOf(result), /Steps: 4/);
  const answer = wire.findIndex((m) => m.result !== undefined && String(m.result.content?.[0]?.text).includes("Steps: 4"));
  const progress = wire.slice(0, answer).filter((m) => m.method === "notifications/progress");
  assert.deepEqual(progress.map((m) => [m.params.progress, m.params.total]), [[1, 4], [2, 4], [3, 4], [4, 4]]);
  // The SDK hands notifications to a microtask but answers at once, so a last report read in the
  // same chunk as the answer never reaches onprogress (typescript-sdk#2580); the earlier ones do.
  assert.deepEqual(seen.slice(0, 3).map((p) => [p.progress, p.total]), [[1, 4], [2, 4], [3, 4]]);
});

test("elicitation and sampling requests from the upstream reach the client and the answers go back", only("calls"), async () => {
  const { client } = await connect("everything");
  const asked = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
  assert.match(textOf(asked), /Ada Lovelace/);
  const sampled = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hello" } });
  assert.match(textOf(sampled), /sampled by the test client/);
});

test("killing the upstream mid-call yields an error and the next call works", only("calls"), async () => {
  const { client, transport } = await connect("everything");
  await client.callTool({ name: "echo", arguments: { message: "warm up" } });
  const [upstreamPid] = upstreamsOf(transport.pid);
  assert.ok(upstreamPid > 0, "toolhost started the upstream");
  const call = client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 20, steps: 20 } },
                               CallToolResultSchema, { onprogress: () => {}, timeout: 60000 });
  await sleep(1500);
  process.kill(upstreamPid, "SIGKILL");
  const result = await call;
  assert.equal(result.isError, true);
  assert.match(textOf(result), /trigger-long-running-operation failed because the upstream .* was killed by signal 9/);
  assert.match(textOf(result), /starts again on the next call/);
  const again = await client.callTool({ name: "echo", arguments: { message: "back again" } });
  assert.equal(textOf(again), "Echo: back again");
  assert.notEqual(upstreamsOf(transport.pid)[0], upstreamPid);
});

test("cancelling mid-call reaches the upstream", only("calls"), async () => {
  const { client } = await connect("probe");
  const controller = new AbortController();
  const call = client.callTool({ name: "wait_for_cancel", arguments: { ms: 30000 } }, CallToolResultSchema,
                               { signal: controller.signal, timeout: 60000 });
  await until("the call to reach the upstream", () => recorded(probeLog).some((e) => e.call === "wait_for_cancel"));
  controller.abort("stop it");
  await assert.rejects(call);
  await until("the upstream to record the cancellation", () => recorded(probeLog).some((e) => "cancelled" in e));
  const entry = recorded(probeLog).find((e) => "cancelled" in e);
  assert.equal(entry.reason, "The client cancelled the call.");
});

test("a tool list change is re-filtered and passed on, and upstream log messages arrive", only("calls"), async () => {
  const { client } = await connect("probe");
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changes += 1; });
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  await client.setLoggingLevel("debug");
  assert.ok(!(await toolNames(client)).includes("added_1"));
  const before = changes;
  const added = await client.callTool({ name: "add_tool", arguments: {} });
  assert.equal(textOf(added), "added_1");
  await until("notifications/tools/list_changed", () => changes > before);
  assert.ok((await toolNames(client)).includes("added_1"));
  const ran = await client.callTool({ name: "added_1", arguments: {} });
  assert.equal(textOf(ran), "added_1 ran");

  await client.callTool({ name: "log", arguments: { text: "mind the gap" } });
  await until("the upstream's log message", () => logs.some((l) => l.data === "mind the gap"));
  assert.equal(logs.find((l) => l.data === "mind the gap").level, "warning");
});

test("the ida server runs the upstream its REA_IDA_MCP_CONFIG names, with no filter", only("calls"), async () => {
  const { client } = await connect("ida");
  const names = await toolNames(client);
  assert.deepEqual(names.sort(), ["add_tool", "ask", "echo", "exit", "log", "progress", "wait_for_cancel"]);
  const echo = await client.callTool({ name: "echo", arguments: { text: "from ida" } });
  assert.equal(textOf(echo), "echo: from ida");
  assert.ok(recorded(idaLog).some((e) => e.call === "echo"));
});

const elevenTable = {
  set_address_name: "rename_function", set_addresses_names: "rename_function",
  set_comment: "add_comment", set_inline_comment: "add_comment",
  set_bookmark: "bookmark", unset_bookmark: "bookmark",
  goto_address: "open_function", set_current_document: "open_function",
  set_code_type: "set_code_type",
};

test("eleven-rea hides REA's writes and passes its reads", only("calls"), async () => {
  const { client } = await connect("eleven-rea");
  const names = await toolNames(client);
  for (const name of Object.keys(elevenTable)) assert.ok(!names.includes(name), `${name} is hidden`);
  for (const name of ["list_procedures", "procedure_pseudo_code", "read_bytes", "xrefs", "binary_overview", "open_binary", "close_binary"]) {
    assert.ok(names.includes(name), `${name} passes`);
  }
  const info = await client.callTool({ name: "procedure_info", arguments: { procedure: "main" } });
  assert.match(textOf(info), /"evidence_uri":"rea:\/\/evidence\/ev_0+"/);
  assert.ok(recorded(reaLog).some((e) => e.call === "procedure_info"));
});

test("eleven-rea answers each hidden write with the eleven tool to use, and REA never sees it", only("denied"), async () => {
  const { client } = await connect("eleven-rea");
  const window = "it would move the analysis window behind Eleven's back";
  const project = "it would change names, comments or bookmarks behind the project's back";
  for (const [name, instead] of Object.entries(elevenTable)) {
    const result = await client.callTool({ name, arguments: { address: "0x100003f2c" } });
    assert.equal(result.isError, true, name);
    const why = instead === "open_function" ? window : project;
    assert.equal(textOf(result), `${name} is not available here: ${why}. Use the \`eleven\` server's \`${instead}\` tool instead.`);
  }
  const reached = recorded(reaLog).map((e) => e.call);
  for (const name of Object.keys(elevenTable)) assert.ok(!reached.includes(name), `${name} never reached REA`);
});

// ---- check-config, upstreams that cannot start, and the order of the first messages ----

// Runs toolhost with `input` on stdin (closed after `holdMs`); its exit code, stdout lines, stderr.
function runToolhost(args, { input = "", env = {}, holdMs = 0, writeAfterMs = 0 } = {}) {
  return new Promise((resolve) => {
    const child = spawn(toolhost, args, { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin.on("error", () => {});  // check-config reads no stdin and may be gone before we write
    let out = "", err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    setTimeout(() => {
      child.stdin.write(input);
      setTimeout(() => child.stdin.end(), holdMs);
    }, writeAfterMs);
    child.on("close", (code) => resolve({ code, lines: out.split("\n").filter(Boolean), stderr: err }));
  });
}

// An npm registry that records every request: a check must send it none.
async function recordingRegistry() {
  const requests = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url);
    res.writeHead(404, { "content-type": "application/json" });
    res.end("{}");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/`, requests, close: () => new Promise((r) => server.close(r)) };
}

const marker = `toolhost-check-${process.pid}`;
const checkConfig = join(work, "check.toml");
const checkTemplate = `
plugin_dirs = [${q(pluginDir)}]
[permissions]
"rea.read" = "allow"
"run" = "allow"

[servers.works]
plugins = ["rea-filter"]
[servers.works.settings.rea-filter]
command = [${q(node)}, ${q(upstream)}, "probe", ${q(marker)}]

[servers.not-installed]
plugins = ["rea-filter"]
[servers.not-installed.settings.rea-filter]
command = ["npx", "-y", "@toolhost-test/never-published-${process.pid}", "mcp"]

[servers.missing]
plugins = ["rea-filter"]
[servers.missing.settings.rea-filter]
command = ["no-such-mcp-server-${process.pid}"]

[servers.slow]
plugins = ["rea-filter"]
[servers.slow.settings.rea-filter]
command = ["sh", "-c", ${q(`sleep 1.5; exec '${node}' '${upstream}' probe`)}]
instructions_wait_ms = WAIT
`;
writeFileSync(checkConfig, checkTemplate.replace("WAIT", "3000"));
const only_servers = (names) => {
  const text = readFileSync(checkConfig, "utf8");
  const file = join(work, `check-${names.join("-")}.toml`);
  // Every other server disabled, so that check-config looks at these alone.
  writeFileSync(file, text.replace(/\[servers\.([a-z-]+)\]\n/g, (all, name) => names.includes(name) ? all : `${all}enabled = false\n`));
  return file;
};
const withWait = (ms) => {
  const file = join(work, `slow-${ms}.toml`);
  writeFileSync(file, checkTemplate.replace("WAIT", String(ms)));
  return file;
};

const ourUpstreams = () => readdirSync("/proc").filter((d) => /^\d+$/.test(d)).filter((pid) => {
  try { return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker); } catch { return false; }
});

test("check-config starts a working upstream, lists it, and leaves nothing running", only("check"), async () => {
  const r = await runToolhost(["check-config", "--config", only_servers(["works"])]);
  assert.equal(r.code, 0, r.lines.join("\n") + r.stderr);
  assert.match(r.lines.at(-1), /: OK \(/);
  assert.deepEqual(ourUpstreams(), []);
});

test("check-config fails for an upstream that cannot start, and downloads nothing to find out", only("check"), async () => {
  const registry = await recordingRegistry();
  const cache = mkdtempSync(join(tmpdir(), "rea-filter-npm-cache-"));
  try {
    const r = await runToolhost(["check-config", "--config", only_servers(["not-installed", "missing"])],
                                { env: { npm_config_registry: registry.url, npm_config_cache: cache } });
    assert.equal(r.code, 1, r.lines.join("\n"));
    const out = r.lines.join("\n");
    assert.match(out, /server 'not-installed'.*`npx -y @toolhost-test\/never-published-\d+ mcp`/);
    assert.match(out, /check-config runs it offline/);
    assert.match(out, /server 'missing'.*could not start `no-such-mcp-server-\d+`/);
    assert.match(r.lines.at(-1), /: 2 problems$/);
    assert.deepEqual(registry.requests, [], "check-config asked the npm registry for a package");
  } finally {
    await registry.close();
    rmSync(cache, { recursive: true, force: true });
  }
});

test("an upstream that cannot start reaches the agent as instructions and as the error of every call", only("check"), async () => {
  const init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n';
  const rest = '{"jsonrpc":"2.0","method":"notifications/initialized"}\n' +
               '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n' +
               '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}\n';
  const r = await runToolhost(["--config", checkConfig, "--server", "missing"], { input: init + rest, holdMs: 3000 });
  const byId = Object.fromEntries(r.lines.map((l) => JSON.parse(l)).filter((m) => m.id !== undefined).map((m) => [m.id, m]));
  assert.match(byId[1].result.instructions, /is not running: could not start `no-such-mcp-server-\d+`/);
  assert.deepEqual(byId[2].result.tools, []);
  assert.equal(byId[3].result.isError, true);
  assert.match(byId[3].result.content[0].text, /is not running: could not start `no-such-mcp-server-\d+`/);
});

for (const [what, waitMs, writeAfterMs] of [
  ["an initialize sent while the upstream starts, which waits for its instructions", 30000, 0],
  ["an initialize sent while the upstream starts, which does not wait", 0, 0],
  ["an initialize sent after the upstream came up", 3000, 2500],
]) {
  test(`nothing precedes the initialize result: ${what}`, only("check"), async () => {
    const init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n';
    const list = '{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n';
    const r = await runToolhost(["--config", withWait(waitMs), "--server", "slow"], { input: init + list, holdMs: 3500, writeAfterMs });
    assert.ok(r.lines.length >= 2, r.stderr);
    const first = JSON.parse(r.lines[0]);
    assert.equal(first.id, 1, `the first line on stdout was ${r.lines[0]}`);
    assert.ok(first.result.protocolVersion);
    for (const line of r.lines) JSON.parse(line);  // only JSON-RPC on stdout
  });
}
