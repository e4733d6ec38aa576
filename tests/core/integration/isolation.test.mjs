// Plugins in their own processes (host/plugins/isolation): a plugin that segfaults, aborts,
// exits, hangs, allocates without bound or prints to fd 1 fails only its own call, over stdio
// and over HTTP; every other plugin keeps answering and the next call to it works again.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { TOOLHOST, FAULTS_CONFIG, FIXTURES_CONFIG, connect, sleep } from "./harness.mjs";

const DEATHS = [
  ["segv", /^The plugin 'fixture-faults' crashed with SIGSEGV \(signal 11\) while the tool die was running; the call is lost, and toolhost starts the plugin again for the next call\.$/],
  ["abort", /^The plugin 'fixture-faults' crashed with SIGABRT \(signal 6\) while the tool die was running; /],
  ["exit0", /^The plugin 'fixture-faults' exited with status 0 while the tool die was running; /],
  ["quick_exit0", /^The plugin 'fixture-faults' exited with status 0 while the tool die was running; /],
];

// Every death: its own clear error, the in-process plugin unaffected, the faulty one back.
async function survivesEveryDeath(client) {
  const before = (await client.callTool({ name: "pid", arguments: {} })).structuredContent.pid;
  assert.notEqual(before, undefined);
  for (const [how, message] of DEATHS) {
    const r = await client.callTool({ name: "die", arguments: { how } });
    assert.equal(r.isError, true, how);
    assert.match(r.content[0].text, message);
    const other = await client.callTool({ name: "count", arguments: { to: 2 } });
    assert.deepEqual(other.structuredContent, { counted: 2, completed: true });
    const again = await client.callTool({ name: "echo", arguments: { text: "back" } });
    assert.deepEqual(again.structuredContent, { length: 4 }, how);
  }
  const after = (await client.callTool({ name: "pid", arguments: {} })).structuredContent.pid;
  assert.notEqual(after, before, "the plugin runs in a new process after its crashes");
}

test("over stdio, a crashing plugin fails only its call and comes back for the next", async () => {
  const { client, stderr } = await connect({ config: FAULTS_CONFIG, server: "isolated" });
  await survivesEveryDeath(client);
  await client.close();
  assert.match(stderr(), /error: isolation: the process of plugin fixture-faults \(pid \d+\) crashed with SIGSEGV \(signal 11\); 1 call\(s\) in flight failed \(1 crash so far\)/);
});

test("over HTTP, the same, with the server up throughout", async () => {
  const child = spawn(TOOLHOST, ["--config", FAULTS_CONFIG, "--server", "isolated", "--http", "127.0.0.1:0"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`toolhost did not start: ${err}`)), 20000);
    child.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/at (http:\/\/127\.0\.0\.1:\d+\/\S*)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  const client = new Client({ name: "isolation-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await survivesEveryDeath(client);
  await client.close();
  assert.equal(child.exitCode, null, "toolhost is still serving");
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
});

test("a call that ignores cancellation past call_timeout_ms is ended by killing its process", async () => {
  const { client, stderr } = await connect({ config: FAULTS_CONFIG, server: "isolated" });
  const before = (await client.callTool({ name: "pid", arguments: {} })).structuredContent.pid;
  const r = await client.callTool({ name: "hang", arguments: {} });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /^The tool hang did not finish within 400 ms/);
  // Two seconds of grace after the cancellation, then the process is killed and started again.
  let after;
  for (let i = 0; i < 100 && (after === undefined || after === before); ++i) {
    await sleep(100);
    after = (await client.callTool({ name: "pid", arguments: {} })).structuredContent.pid;
  }
  assert.notEqual(after, before);
  const again = await client.callTool({ name: "hang", arguments: {} });  // its turn comes again
  assert.match(again.content[0].text, /^The tool hang did not finish within 400 ms/);
  await client.close();
  assert.match(stderr(), /the process of plugin fixture-faults \(pid \d+\) was stopped by toolhost because the tool hang was running and did not return within 2 s of being cancelled/);
});

test("memory_limit_mb bounds what an isolated plugin allocates", async () => {
  const { client } = await connect({ config: FAULTS_CONFIG, server: "isolated" });
  const r = await client.callTool({ name: "allocate", arguments: {} });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /allocate failed: std::bad_alloc|^The plugin 'fixture-faults' crashed/);
  const again = await client.callTool({ name: "echo", arguments: { text: "ok" } });
  assert.deepEqual(again.structuredContent, { length: 2 });
  await client.close();
});

test("bytes an isolated plugin writes to fd 1 go to stderr, never to the MCP stream", async () => {
  const child = spawn(TOOLHOST, ["--config", FAULTS_CONFIG, "--server", "isolated"], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d.toString("latin1")));
  child.stderr.on("data", (d) => (err += d));
  const send = (m) => child.stdin.write(JSON.stringify(m) + "\n");
  send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {} } });
  send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "print", arguments: {} } });
  // The crash only after print is answered: calls run concurrently, and one still in flight in the
  // process that crashes is lost with it (as the crash tests above assert).
  for (let i = 0; i < 600 && !out.includes('"id":1,'); ++i) await sleep(50);
  send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "die", arguments: { how: "segv" } } });
  // After the crash is answered (a call sent meanwhile would be lost with it), in a new process.
  for (let i = 0; i < 600 && !out.includes('"id":2,'); ++i) await sleep(50);
  send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "print", arguments: {} } });
  for (let i = 0; i < 600 && !out.includes('"id":3,'); ++i) await sleep(50);
  child.stdin.end();
  await new Promise((r) => child.once("exit", r));
  const lines = out.split("\n").filter(Boolean);
  for (const l of lines) assert.equal(JSON.parse(l).jsonrpc, "2.0", l);
  const results = lines.map((l) => JSON.parse(l)).filter((m) => m.id === 1 || m.id === 3);
  assert.deepEqual(results.map((m) => m.result.content[0].text), ["printed", "printed"]);
  assert.ok(err.includes("garbage on fd 1"), err);
  assert.ok(err.includes("and through stdio"), err);
});

test("settings, progress, cancellation, resources, prompts, completions and elicitation cross the process boundary", async () => {
  const asked = [];
  const { client, received, transport } = await connect({
    config: FAULTS_CONFIG,
    server: "all-isolated",
    capabilities: { elicitation: {} },
    onElicit: (req) => {
      asked.push(req.params.message);
      return { action: "decline" };
    },
  });
  await client.setLoggingLevel("debug");
  // Its settings reached it: {"tools": 2} adds many_0 and many_1.
  const names = (await client.listTools()).tools.map((t) => t.name);
  assert.ok(names.includes("many_0") && names.includes("many_1") && !names.includes("many_2"), names.join(" "));
  const counted = await client.callTool({ name: "count", arguments: { to: 3 } }, CallToolResultSchema, {
    onprogress: () => {},
  });
  assert.deepEqual(counted.structuredContent, { counted: 3, completed: true });
  // As sent (the SDK drops reports that arrive after it has the result).
  const progress = received.filter((m) => m.method === "notifications/progress" && m.params.total === 3).map((m) => m.params.message);
  assert.deepEqual(progress, ["counted to 1", "counted to 2", "counted to 3"]);
  // Cancelled by the client: the plugin sees it in its own process and stops.
  const controller = new AbortController();
  const pending = client.callTool({ name: "count", arguments: { to: 1000, delay_ms: 50 } }, CallToolResultSchema, {
    signal: controller.signal,
    onprogress: () => controller.abort(),
  });
  await assert.rejects(pending);
  // The plugin saw the cancellation in its own process and stopped counting.
  const token = (m) => m.method === "notifications/progress" && m.params.total === 1000;
  await sleep(300);
  const sent = received.filter(token).length;
  await sleep(500);
  assert.equal(received.filter(token).length, sent, "progress went on after the cancellation");
  // leak_home: progress, a log message and an elicitation from inside a call.
  await client.callTool({ name: "leak_home", arguments: {} });
  assert.equal(asked.length, 1);
  assert.match(asked[0], /^May I read /);
  assert.ok(received.some((m) => m.method === "notifications/message"));
  const resource = await client.readResource({ uri: "fixture://home" });
  assert.match(resource.contents[0].text, /^the home folder is /);
  const prompt = await client.getPrompt({ name: "where", arguments: { color: "red" } });
  const renderedIn = Number(prompt.messages[0].content.text.match(/^red from (\d+)$/)[1]);
  const pid = (await client.callTool({ name: "pid", arguments: {} })).structuredContent.pid;
  assert.equal(renderedIn, pid, "the prompt is rendered in the plugin's process");
  assert.notEqual(pid, transport.pid);
  const completion = await client.complete({ ref: { type: "ref/prompt", name: "where" }, argument: { name: "color", value: "gr" } });
  assert.deepEqual(completion.completion.values, ["green", "grey"]);
  await client.close();
});

test("a provider (rea-filter in front of server-everything) serves its upstream from its own process", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-iso-proxy-"));
  const everything = path.join(path.dirname(new URL(import.meta.url).pathname), "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
  const q = JSON.stringify;
  const config = path.join(dir, "proxy.toml");
  fs.writeFileSync(config, `plugin_dirs = [${q(process.env.PLUGIN_DIR)}]
[permissions]
"run" = "allow"
[servers.proxy]
plugins = ["rea-filter"]
isolation = "process"
[servers.proxy.settings.rea-filter]
command = [${q(process.execPath)}, ${q(everything)}, "stdio"]
instructions_wait_ms = 30000
deny = ["get-env"]
use_instead = { "get-env" = "echo" }
`);
  const { client } = await connect({ config, server: "proxy" });
  const names = (await client.listTools()).tools.map((t) => t.name);
  assert.ok(names.includes("echo") && !names.includes("get-env"), names.join(" "));
  const echoed = await client.callTool({ name: "echo", arguments: { message: "across" } });
  assert.match(echoed.content[0].text, /across/);
  // A name the provider hides on purpose still reaches it, and it explains.
  const hidden = await client.callTool({ name: "get-env", arguments: {} });
  assert.equal(hidden.isError, true);
  assert.match(hidden.content[0].text, /echo/);
  const resources = await client.listResources();
  assert.ok(resources.resources.length > 0);
  const read = await client.readResource({ uri: resources.resources[0].uri });
  assert.ok(read.contents.length > 0);
  const prompts = (await client.listPrompts()).prompts;
  assert.ok(prompts.length > 0);
  await client.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a debugger whose backend runs in another process is refused with how to group them", async () => {
  const { client } = await connect({ config: FAULTS_CONFIG, server: "debugger-split" });
  const r = await client.callTool({ name: "command", arguments: { command: "version" } });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /dump-backend in the process of group 'dump-backend' register transports \(toolhost.debug-target\/1 dump of dump-backend\), which plugins in another process cannot reach, but debugger \(in toolhost's own process\) run apart from them; put them all in one group/);
  await client.close();

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-iso-"));
  fs.writeFileSync(path.join(dir, "not.dmp"), "not a dump");
  const grouped = await connect({ config: FAULTS_CONFIG, server: "debugger-grouped" });
  const open = await grouped.client.callTool({ name: "open", arguments: { backend: "dump", connect: `${dir}/not.dmp` } });
  // The backend answers from inside the group's process: the file is not a dump.
  assert.equal(open.isError, true);
  assert.doesNotMatch(open.content[0].text, /transport|backend .* not/i);
  await grouped.client.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("isolation settings are checked keys", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-iso-config-"));
  const check = (text) => {
    const file = path.join(dir, "t.toml");
    fs.writeFileSync(file, text);
    return spawnSync(TOOLHOST, ["check-config", "--config", file], { encoding: "utf8" });
  };
  let r = check('[servers.s]\nplugins = ["example"]\nisolation = "sometimes"\n');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /t\.toml:3:13: servers\.s\.isolation: expected "process" \(a child process of its own\) or "none" \(in toolhost\)/);
  r = check('[servers.s]\nplugins = ["example"]\n[servers.s.plugin_options.exmaple]\nisolation = "process"\n');
  assert.match(r.stderr, /t\.toml:3:1: servers\.s\.plugin_options\.exmaple: names plugin 'exmaple', which servers\.s\.plugins does not list/);
  r = check('[servers.s]\nplugins = ["example"]\n[servers.s.plugin_options.example]\nisolation = "none"\ngroup = "g"\n');
  assert.match(r.stderr, /servers\.s\.plugin_options\.example\.group: a group is a shared process, so it needs isolation = "process"/);
  r = check('[servers.s]\nplugins = ["example"]\n[servers.s.plugin_options.example]\nisolaton = "process"\n');
  assert.match(r.stderr, /servers\.s\.plugin_options\.example\.isolaton: unknown key; expected one of: isolation, group, memory_limit_mb/);
  r = check('[servers.s]\nplugins = ["example"]\nmemory_limit_mb = 1\n');
  assert.match(r.stderr, /servers\.s\.memory_limit_mb: must be between 16 and 1048576/);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("toolhost plugins shows where each plugin runs", () => {
  const r = spawnSync(TOOLHOST, ["plugins", "--config", FAULTS_CONFIG, "--server", "debugger-grouped"], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^debugger\s+\S+\s+1\.\d+\s+loaded\s+process \(group debug\)\s+/m);
  assert.match(r.stdout, /^dump-backend\s+\S+\s+1\.\d+\s+loaded\s+process \(group debug\)\s+-\s+toolhost\.debug-target\/1:dump\n/m);
  const j = spawnSync(TOOLHOST, ["plugins", "--json", "--config", FAULTS_CONFIG, "--server", "isolated"], { encoding: "utf8" });
  const listed = Object.fromEntries(JSON.parse(j.stdout).plugins.map((p) => [p.id, p]));
  assert.deepEqual([listed["fixture-faults"].isolation, listed["fixture-faults"].group, listed["fixture-faults"].crashes], ["process", "fixture-faults", 0]);
  assert.equal(listed.example.isolation, "none");
  assert.ok(listed["fixture-faults"].tools.includes("die"));
});

test("toolhost plugins reports each plugin's load and init faults the same isolated as in process", () => {
  const list = (isolation) => {
    const r = spawnSync(TOOLHOST, ["plugins", "--json", "--config", FIXTURES_CONFIG], {
      encoding: "utf8",
      env: { ...process.env, TOOLHOST_ISOLATION: isolation },
    });
    return JSON.parse(r.stdout).plugins.map((p) => ({ file: p.file, status: p.status, problem: p.problem, isolation: p.isolation }));
  };
  const inProcess = list("none"), isolated = list("process");
  assert.ok(inProcess.some((p) => p.status === "init crashed") && inProcess.some((p) => p.status === "init failed"));
  assert.ok(isolated.every((p) => p.isolation === "process"));
  const strip = (ps) => ps.map(({ isolation, ...rest }) => rest);
  assert.deepEqual(strip(isolated), strip(inProcess));
});

test("TOOLHOST_ISOLATION=process isolates every plugin the configuration does not place, a server's together", async () => {
  const j = spawnSync(TOOLHOST, ["plugins", "--json", "--config", FAULTS_CONFIG, "--server", "debugger"], {
    encoding: "utf8",
    env: { ...process.env, TOOLHOST_ISOLATION: "process" },
  });
  const listed = JSON.parse(j.stdout).plugins.map((p) => [p.id, p.isolation, p.group]);
  assert.deepEqual(listed, [["debugger", "process", "isolated"], ["dump-backend", "process", "isolated"]]);
  // Served that way, the debugger reaches its backend inside the shared process.
  const { client } = await connect({ config: FAULTS_CONFIG, server: "debugger", env: { TOOLHOST_ISOLATION: "process" } });
  const open = await client.callTool({ name: "open", arguments: { backend: "dump", connect: "/nonexistent/x.dmp" } });
  assert.equal(open.isError, true);
  assert.doesNotMatch(open.content[0].text, /refuses the tools|register transports/);
  await client.close();
});
