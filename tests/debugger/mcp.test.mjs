// The debugger through toolhost over MCP stdio with the official TypeScript SDK client:
// ntoseye's tool surface driving a real gdbserver (acceptance path, run-control rules, json
// results, paging, launch-time attach from the server settings).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toolhostEnv } from "../toolhost_env.mjs";

const TOOLHOST = process.env.TOOLHOST;
const PLUGINS = process.env.PLUGINS_DIR;
const DEMO = process.env.DEMO_PROGRAM;
const EXE = "gdb_demo_program";
const dir = mkdtempSync(join(tmpdir(), "toolhost-debugger-"));
const servers = [];
const clients = [];
const inferiors = new Set();

// gdbserver on a free port; resolves once it listens. `output()` is what the program printed.
function gdbserver(args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn("gdbserver", ["--once", "127.0.0.1:0", DEMO, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    servers.push(child);
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => {
      err += d;
      const pid = /pid = (\d+)/.exec(err);
      if (pid) inferiors.add(Number(pid[1]));
      const m = /Listening on port (\d+)/.exec(err);
      if (m) resolve({ address: `127.0.0.1:${m[1]}`, output: () => out, child });
    });
    child.on("exit", () => reject(new Error("gdbserver exited: " + err)));
  });
}

function config(extra = "") {
  const path = join(dir, `config-${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(
    path,
    `plugin_dirs = [${JSON.stringify(PLUGINS)}]
default_server = "dbg"
[servers.dbg]
description = "debugger tests"
plugins = ["debugger", "gdb-backend"]
${extra}`,
  );
  return path;
}

async function connect(configPath, server = "dbg") {
  const client = new Client({ name: "toolhost-debugger-test", version: "1.0.0" });
  const transport = new StdioClientTransport({ command: TOOLHOST, args: ["--config", configPath, "--server", server], env: toolhostEnv(), stderr: "pipe" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function cmd(client, line, timeout_ms = 10000, format) {
  const args = { line, timeout_ms };
  if (format) args.format = format;
  const r = await client.callTool({ name: "command", arguments: args });
  const text = r.content.map((c) => c.text).join("");
  return { text, error: r.isError === true, structured: r.structuredContent, trailer: text.slice(text.lastIndexOf("[target")) };
}

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  for (const s of servers) s.kill("SIGKILL");
  // Detached debuggees outlive gdbserver; they are the test's, so they go too.
  for (const pid of inferiors) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  rmSync(dir, { recursive: true, force: true });
});

test("the tool surface and the instructions", async () => {
  const client = await connect(config());
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ["close", "command", "open", "output"]);
  const command = tools.find((t) => t.name === "command");
  assert.deepEqual(Object.keys(command.inputSchema.properties).sort(), ["format", "line", "timeout_ms"]);
  assert.equal(command.inputSchema.properties.timeout_ms.maximum, 300000);
  const open = tools.find((t) => t.name === "open");
  assert.deepEqual(open.inputSchema.properties.backend.enum, ["kd", "kdnet", "gdb", "memory", "dump"]);
  assert.match(client.getInstructions(), /ask the user how the VM or process is exposed/);
  const none = await cmd(client, "k");
  assert.equal(none.error, true);
  assert.match(none.text, /No target is attached/);
  const tooLong = await client.callTool({ name: "command", arguments: { line: "k", timeout_ms: 300001 } });
  assert.equal(tooLong.isError, true);
  await client.close();
});

test("gdbserver: bp by symbol, g, k, dq/db, eb, p/t, gu, bl/bc, lm", async () => {
  const server = await gdbserver();
  const client = await connect(config());
  const opened = await client.callTool({ name: "open", arguments: { backend: "gdb", connect: server.address } });
  assert.equal(opened.isError, undefined, JSON.stringify(opened));
  assert.equal(opened.structuredContent.status, "connected");
  assert.equal((await client.callTool({ name: "open", arguments: { backend: "gdb", connect: server.address } })).isError, true);

  assert.equal((await cmd(client, `bp ${EXE}!fill_message`)).error, false);
  const hit = await cmd(client, "g");
  assert.match(hit.text, /Breakpoint 0 hit/);
  assert.match(hit.trailer, new RegExp(`^\\[target halted @ 0 [0-9a-f\`]+ ${EXE}!fill_message \\| process ${EXE} \\(\\d+\\)\\]$`));

  const k = await cmd(client, "k");
  const order = [`${EXE}!fill_message`, `${EXE}!main+`, "libc!"].map((s) => k.text.indexOf(s));
  assert.ok(order.every((i) => i >= 0) && order[0] < order[1] && order[1] < order[2], k.text);

  const gu = await cmd(client, "gu");
  assert.match(gu.trailer, new RegExp(`${EXE}!main\\+`));
  assert.match((await cmd(client, `dq ${EXE}!marker L1`)).text, /11223344`55667788/);
  assert.match((await cmd(client, `db ${EXE}!message L10`)).text, /68 65 6c 6c 6f 2c 20 77-6f 72 6c 64 00.*hello, world/);

  const before = (await cmd(client, "r rip")).text;
  const p = await cmd(client, "p");
  assert.notEqual(p.trailer, before.slice(before.lastIndexOf("[target")));
  let entered = false;
  for (let i = 0; i < 20 && !entered; ++i) entered = (await cmd(client, "t")).trailer.includes(`${EXE}!step_target`);
  assert.ok(entered, "t stepped into step_target");
  assert.match((await cmd(client, "gu")).trailer, new RegExp(`${EXE}!main\\+`));

  await cmd(client, `bp ${EXE}!report`);
  const bl = await cmd(client, "bl", 10000, "json");
  assert.deepEqual(bl.structured.result.breakpoints.map((b) => b.id), [0, 1]);
  await cmd(client, "bc 0");
  assert.deepEqual((await cmd(client, "bl", 10000, "json")).structured.result.breakpoints.map((b) => b.id), [1]);

  assert.match((await cmd(client, "g")).text, /Breakpoint 1 hit/);
  const lm = await cmd(client, "lm", 10000, "json");
  const names = lm.structured.result.modules.map((m) => m.path);
  assert.ok(names.some((n) => n.endsWith(EXE)) && names.some((n) => n.endsWith("libc.so.6")), names.join(","));

  const r = await cmd(client, "r", 10000, "json");
  assert.deepEqual(Object.keys(r.structured).sort(), ["debug_output", "ok", "output", "result", "target"]);
  assert.equal(r.structured.ok, true);
  assert.equal(r.structured.target.running, false);
  assert.equal(r.structured.target.symbol, `${EXE}!report`);
  assert.equal(r.structured.result.registers.rip, r.structured.target.rip);

  assert.equal((await cmd(client, `eb ${EXE}!message 4a`)).error, false);
  assert.equal((await cmd(client, "g")).trailer, "[target exited]");
  await new Promise((r) => setTimeout(r, 200));
  assert.match(server.output(), /message=Jello, world/);
  const closed = await client.callTool({ name: "close", arguments: {} });
  assert.equal(closed.structuredContent.status, "closed");
  await client.close();
});

test("run control: [target running], break, 'break; bp; g', parked stop refusal, halted-only wait", async () => {
  const spinning = await gdbserver(["spin"]);
  const client = await connect(config());
  await client.callTool({ name: "open", arguments: { backend: "gdb", connect: spinning.address } });
  assert.equal((await cmd(client, "g", 300)).trailer, "[target running]");
  const brk = await cmd(client, "break");
  assert.match(brk.text, /Break-in/);
  assert.match(brk.trailer, /^\[target halted @ /);
  await cmd(client, "g", 100);
  const oneLine = await cmd(client, "break; bp @rip; g");
  assert.equal(oneLine.error, false, oneLine.text);
  assert.match(oneLine.text, /Breakpoint 0 hit/);
  await client.callTool({ name: "close", arguments: {} });

  const slow = await gdbserver(["slow"]);
  await client.callTool({ name: "open", arguments: { backend: "gdb", connect: slow.address } });
  await cmd(client, `bp ${EXE}!report`);
  assert.equal((await cmd(client, "g", 50)).trailer, "[target running]");
  await new Promise((r) => setTimeout(r, 1500));
  const refused = await cmd(client, "g");
  assert.equal(refused.error, true);
  assert.ok(refused.text.startsWith("Breakpoint 0 hit"), refused.text);
  assert.match(refused.text, /'g' was not run/);
  assert.equal((await cmd(client, "g")).trailer, "[target exited]");
  await client.callTool({ name: "close", arguments: {} });

  const slow2 = await gdbserver(["slow"]);
  await client.callTool({ name: "open", arguments: { backend: "gdb", connect: slow2.address } });
  await cmd(client, `bp ${EXE}!report`);
  assert.equal((await cmd(client, "g", 50)).trailer, "[target running]");
  const waited = await cmd(client, "k", 10000);
  assert.equal(waited.error, false);
  assert.ok(waited.text.indexOf("Breakpoint 0 hit") < waited.text.indexOf("Child-SP"), waited.text);
  await client.close();
});

test("output paging by offset and by filter", async () => {
  const server = await gdbserver();
  const client = await connect(config());
  await client.callTool({ name: "open", arguments: { backend: "gdb", connect: server.address } });
  await cmd(client, `bp ${EXE}!report; g`);
  const big = await cmd(client, "db libc L4000");
  const m = /\[output (\d+): (\d+) lines, offsets 0-(\d+) shown; the output tool reads on from offset (\d+), or with a filter finds lines in it\]/.exec(big.text);
  assert.ok(m, big.text.slice(-300));
  const [id, lines, last] = [Number(m[1]), Number(m[2]), Number(m[3])];
  assert.equal(lines, 0x400);
  const next = await client.callTool({ name: "output", arguments: { id, offset: last + 1, limit: 2 } });
  assert.ok(next.content[0].text.startsWith(`${last + 1}: `));
  const found = await client.callTool({ name: "output", arguments: { id, filter: ".ELF" } });
  assert.match(found.content[0].text, /^0: .*7f 45 4c 46/);
  await client.close();
});

test("launch-time attach from the server's debugger settings", async () => {
  const server = await gdbserver();
  const path = config(`[servers.dbg.settings.debugger]\nbackend = "gdb"\nconnect = "${server.address}"\n`);
  const client = await connect(path);
  const first = await cmd(client, `bp ${EXE}!report; g`);
  assert.match(first.text, /Attached to gdb at 127\.0\.0\.1:\d+/);
  assert.match(first.text, /Breakpoint 0 hit/);
  await client.close();
});
