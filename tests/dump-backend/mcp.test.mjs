// The dump and memory backends through toolhost and the debugger plugin over MCP stdio, with
// the official TypeScript SDK client: open {backend:"dump"} on a gcore (db/dq show what the
// program wrote, r shows what gdb shows, run control is refused), on a Windows dump (virtual
// reads through its page tables, modules), open {backend:"memory"} on a live QEMU guest (!db
// agrees with the gdbstub), and a QEMU dump-guest-memory file against the same guest read live
// through the gdb backend (!db and registers).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createServer, createConnection } from "node:net";
import { mkdtempSync, writeFileSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toolhostEnv } from "../toolhost_env.mjs";

const TOOLHOST = process.env.TOOLHOST;
const PLUGINS = process.env.PLUGINS_DIR;
const CORE_TARGET = process.env.CORE_TARGET;
const GENERATE = process.env.WINDUMP_GENERATE;
const RUN_QEMU = process.env.RUN_QEMU;
const GUEST = process.env.GUEST_IMAGE;
const dir = mkdtempSync(join(tmpdir(), "toolhost-dump-mcp-"));
const children = [];

after(() => {
  for (const c of children) c.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

function config() {
  const path = join(dir, "config.toml");
  writeFileSync(
    path,
    `plugin_dirs = [${JSON.stringify(PLUGINS)}]
default_server = "dumps"
[servers.dumps]
description = "dump and memory backend tests"
plugins = ["debugger", "dump-backend", "memory-backend"]
[servers.live]
description = "the gdb backend, to compare with"
plugins = ["debugger", "gdb-backend"]
`,
  );
  return path;
}

async function connect(server = "dumps", extra = []) {
  const client = new Client({ name: "toolhost-dump-test", version: "1.0.0" });
  const transport = new StdioClientTransport({ command: TOOLHOST, args: ["--config", config(), "--server", server, ...extra], env: toolhostEnv(), stderr: "pipe" });
  await client.connect(transport);
  return client;
}

async function cmd(client, line, format) {
  const args = { line, timeout_ms: 10000 };
  if (format) args.format = format;
  const r = await client.callTool({ name: "command", arguments: args });
  return { text: r.content.map((c) => c.text).join(""), error: r.isError === true, structured: r.structuredContent };
}

const big = (v) => BigInt(String(v).startsWith("0x") ? v : "0x" + String(v).replaceAll("`", ""));

test("a gcore through toolhost: memory and registers as gdb shows them; a dump does not run", async () => {
  const core = join(dir, "core");
  const addresses = join(dir, "addresses");
  const gdb = spawnSync("gdb", ["-batch", "-nx", "-ex", "set pagination off", "-ex", "run", "-ex", `gcore ${core}`,
    "-ex", "info registers rip rsp rbp rax rbx r12 eflags", "-ex", "kill", "--args", CORE_TARGET, addresses], { encoding: "utf8", timeout: 90000 });
  assert.match(gdb.stdout, /SIGUSR1/, gdb.stdout + gdb.stderr);
  const client = await connect();
  const opened = await client.callTool({ name: "open", arguments: { backend: "dump", connect: core } });
  assert.equal(opened.isError, undefined, JSON.stringify(opened));

  // The heap region (region 0): byte k is (k * 3) & 0xff.
  const [, heap] = readFileSync(addresses, "utf8").split("\n")[0].split(" ");
  const db = await cmd(client, `db ${heap} L10`);
  assert.equal(db.error, false, db.text);
  assert.match(db.text, /00 03 06 09 0c 0f 12 15-18 1b 1e 21 24 27 2a 2d/);

  const r = await cmd(client, "r", "json");
  assert.equal(r.error, false, r.text);
  let compared = 0;
  for (const m of gdb.stdout.matchAll(/^(rip|rsp|rbp|rax|rbx|r12|eflags)\s+(0x[0-9a-f]+)/gm)) {
    assert.equal(big(r.structured.result.registers[m[1]]), BigInt(m[2]), m[1]);
    ++compared;
  }
  assert.equal(compared, 7, gdb.stdout);
  const g = await cmd(client, "g");
  assert.equal(g.error, true);
  assert.match(g.text, /does not run|cannot|not support/i);
  assert.equal((await client.callTool({ name: "close", arguments: {} })).isError, undefined);
  await client.close();
});

test("a Windows kernel dump through toolhost: virtual reads through its page tables", async () => {
  const dmp = join(dir, "kernel.dmp");
  assert.equal(spawnSync(GENERATE, ["10", dmp]).status, 0);
  const client = await connect();
  const opened = await client.callTool({ name: "open", arguments: { backend: "dump", connect: dmp } });
  assert.equal(opened.isError, undefined, JSON.stringify(opened));
  // 0xfffff80040007000 maps through a 1 GiB page to physical 0x40007000, byte k = (0x40007 * 31 + k * 7) & 0xff.
  const expected = Array.from({ length: 8 }, (_, k) => ((0x40007 * 31 + k * 7) & 0xff).toString(16).padStart(2, "0")).join(" ");
  const db = await cmd(client, "db fffff800`40007000 L8");
  assert.equal(db.error, false, db.text);
  assert.ok(db.text.includes(expected), db.text + " / " + expected);
  const phys = await cmd(client, "!db 40007000 L8");
  assert.equal(phys.error, false, phys.text);
  assert.ok(phys.text.includes(expected), phys.text);
  const r = await cmd(client, "r rip", "json");
  assert.equal(big(r.structured.result.registers.rip), 0xfffff80000010123n);
  // lm names the kernel "nt"; as WinDbg does at a kernel attach, nt's symbols are looked for at once
  // (the kernel model reads its globals; this dump's image has no PDB or exports), the other
  // modules' only when used; lmv shows the image files.
  const lm = await cmd(client, "lm");
  assert.equal(lm.error, false, lm.text);
  assert.match(lm.text, /\snt\s+\(no symbols\)/);
  assert.match(lm.text, /\shal\s+\(deferred\)/);
  const lmv = await cmd(client, "lmv");
  assert.equal(lmv.error, false, lmv.text);
  assert.match(lmv.text, /ntoskrnl/);
  assert.match(lmv.text, /hal/);
  await client.close();
});

test("--dump FILE opens the dump at the first call, as ntoseye's launch flag does", async () => {
  const dmp = join(dir, "launch.dmp");
  assert.equal(spawnSync(GENERATE, ["10", dmp]).status, 0);
  const client = await connect("dumps", ["--dump", dmp]);
  // No open: the first command attaches to the file the flag names.
  const r = await cmd(client, "r rip", "json");
  assert.equal(r.error, false, r.text);
  assert.match(r.text, new RegExp(`Attached to dump at ${dmp.replaceAll("/", "\\/")}`));
  assert.equal(big(r.structured.result.registers.rip), 0xfffff80000010123n);
  await client.close();
  // --dump names the target alone.
  const both = spawnSync(TOOLHOST, ["--config", config(), "--server", "dumps", "--backend", "gdb", "--dump", dmp],
    { encoding: "utf8", input: "" });
  assert.notEqual(both.status, 0);
  assert.match(both.stderr, /--dump FILE names the target by itself/);
});

test("a live QEMU guest through the memory backend: !db agrees with the gdbstub", { skip: !existsSync(GUEST ?? "") && "no guest image" }, async () => {
  const serial = join(dir, "serial");
  const qmp = join(dir, "qmp.sock");
  const gdbSock = join(dir, "gdb.sock");
  const pidfile = join(dir, "qemu.pid");
  const qemu = spawn(RUN_QEMU, ["--image", GUEST, "-serial", serial, "-qmp", qmp, "-gdb", gdbSock, "-pidfile", pidfile, "-timeout", "100"], { stdio: "ignore" });
  children.push(qemu);
  for (let i = 0; i < 300 && !(existsSync(serial) && readFileSync(serial, "utf8").includes("ready") && existsSync(pidfile)); ++i) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const pid = readFileSync(pidfile, "utf8").trim();
  const client = await connect();
  const opened = await client.callTool({ name: "open", arguments: { backend: "memory", connect: `pid=${pid},qmp=${qmp}` } });
  assert.equal(opened.isError, undefined, JSON.stringify(opened));
  const mine = await cmd(client, "!db 800000 L10");
  assert.equal(mine.error, false, mine.text);
  assert.match(mine.text, /54 4f 4f 4c 48 4f 53 54-2d 31 47 2d 50 41 47 45/); // "TOOLHOST-1G-PAGE"
  const live = spawnSync("gdb", ["-batch", "-nx", "-ex", "set architecture i386:x86-64", "-ex", `target remote ${gdbSock}`,
    "-ex", "maintenance packet Qqemu.PhyMemMode:1", "-ex", "x/16xb 0x800010", "-ex", "detach"], { encoding: "utf8", timeout: 60000 });
  const gdbBytes = [...live.stdout.matchAll(/0x([0-9a-f]{2})\b/g)].map((m) => m[1]).slice(-16).join(" ");
  const ours = await cmd(client, "!db 800010 L10");
  const ourBytes = (/ ((?:[0-9a-f]{2}[ -]){15}[0-9a-f]{2})/.exec(ours.text) ?? ["", ""])[1].replaceAll("-", " ");
  assert.equal(ourBytes, gdbBytes, ours.text + "\n" + live.stdout);
  const g = await cmd(client, "g");
  assert.equal(g.error, true);

  // .dump /f writes a full Windows dump of the guest's RAM; the dump backend reads it back.
  const dumpFile = join(dir, "live.dmp");
  const dumped = await cmd(client, `.dump /f ${dumpFile}`);
  assert.equal(dumped.error, false, dumped.text);
  assert.match(dumped.text, /Dump written to .*live\.dmp: \d+ pages \(\d+ bytes\)/);
  await client.close();
  const offline = await connect();
  const reopened = await offline.callTool({ name: "open", arguments: { backend: "dump", connect: dumpFile } });
  assert.equal(reopened.isError, undefined, JSON.stringify(reopened));
  const back = await cmd(offline, "!db 800000 L10");
  assert.equal(back.error, false, back.text);
  assert.match(back.text, /54 4f 4f 4c 48 4f 53 54-2d 31 47 2d 50 41 47 45/); // "TOOLHOST-1G-PAGE"
  await offline.close();
});

// A free TCP port on the loopback interface.
function freePort() {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// One QMP command on a fresh connection (greeting, capabilities, the command).
function qmp(socket, execute, args) {
  return new Promise((resolve, reject) => {
    const c = createConnection(socket);
    let buffer = "";
    let step = 0;
    c.on("data", (d) => {
      buffer += d;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const msg = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        if (msg.event) continue;
        if (step === 0) c.write(JSON.stringify({ execute: "qmp_capabilities" }) + "\n");
        else if (step === 1) c.write(JSON.stringify({ execute, arguments: args }) + "\n");
        else {
          c.end();
          return msg.error ? reject(new Error(msg.error.desc)) : resolve(msg.return);
        }
        ++step;
      }
    });
    c.on("error", reject);
  });
}

test("a QEMU guest dump: !db and registers match the live guest read through the gdb backend", { skip: !existsSync(GUEST ?? "") && "no guest image" }, async () => {
  const serial = join(dir, "serial2");
  const qmpSocket = join(dir, "qmp2.sock");
  const pidfile = join(dir, "qemu2.pid");
  const port = await freePort();
  const qemu = spawn(RUN_QEMU, ["--image", GUEST, "-serial", serial, "-qmp", qmpSocket, "-gdb", String(port), "-pidfile", pidfile, "-timeout", "100"], { stdio: "ignore" });
  children.push(qemu);
  for (let i = 0; i < 300 && !(existsSync(serial) && readFileSync(serial, "utf8").includes("ready") && existsSync(pidfile)); ++i) {
    await new Promise((r) => setTimeout(r, 100));
  }
  // The gdb backend attaches (QEMU halts), then QEMU writes the dump of the halted guest.
  const live = await connect("live");
  const opened = await live.callTool({ name: "open", arguments: { backend: "gdb", connect: `127.0.0.1:${port}` } });
  assert.equal(opened.isError, undefined, JSON.stringify(opened));
  const dumpFile = join(dir, "guest.elf");
  await qmp(qmpSocket, "dump-guest-memory", { paging: false, protocol: `file:${dumpFile}` });
  const offline = await connect();
  const openedDump = await offline.callTool({ name: "open", arguments: { backend: "dump", connect: dumpFile } });
  assert.equal(openedDump.isError, undefined, JSON.stringify(openedDump));

  const bytes = (text) => (/ ((?:[0-9a-f]{2}[ -]){15}[0-9a-f]{2})/.exec(text) ?? ["", ""])[1];
  for (const at of ["800000", "305ff0", "5ff000", "108000", "110000"]) {
    const a = await cmd(live, `!db ${at} L10`);
    const b = await cmd(offline, `!db ${at} L10`);
    assert.equal(a.error, false, a.text);
    assert.equal(b.error, false, b.text);
    assert.notEqual(bytes(a.text), "", a.text);
    assert.equal(bytes(b.text), bytes(a.text), `!db ${at}: ${b.text} vs ${a.text}`);
  }
  const ra = await cmd(live, "r rip, rsp, r12, r15", "json");
  const rb = await cmd(offline, "r rip, rsp, r12, r15", "json");
  for (const name of ["rip", "rsp", "r12", "r15"]) {
    assert.equal(big(rb.structured.result.registers[name]), big(ra.structured.result.registers[name]), name);
  }
  await offline.close();
  await live.callTool({ name: "close", arguments: {} });
  await live.close();
});
