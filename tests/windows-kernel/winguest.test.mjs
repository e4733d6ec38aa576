// Issue 19's acceptance on the Windows-shaped QEMU test guest (tests/guest/windows), through
// toolhost over MCP stdio with the official TypeScript SDK client, over the gdb backend (QEMU's
// gdbstub), the memory backend (the VM's RAM), the dump backend (a `.dump /f` of the guest) and
// the kd backend (kd-sim serving a snapshot of the guest over a lossy wire, and kd-sim driving
// the running guest through QEMU's gdbstub: the live KD target).
// Expected values come from the guest's own report on COM1 (winguest-layout) and from QEMU's
// `gva2gpa` over QMP, never from the debugger.
// The kdnet backend: kdnet-sim carrying a kd-sim's KD packets over KDNET, losing and corrupting
// datagrams.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, rmSync, existsSync, mkdirSync, copyFileSync, readdirSync } from "node:fs";
import { createConnection } from "node:net";
import { createSocket } from "node:dgram";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toolhostEnv } from "../toolhost_env.mjs";

const TOOLHOST = process.env.TOOLHOST;
const PLUGINS = process.env.PLUGINS_DIR;
const GUEST = process.env.WINGUEST_DIR; // images, PDBs (a symbol path), run-winguest, winguest-layout
const KD_SIM = process.env.KD_SIM; // tests/kd-sim: serves a snapshot of the guest, or the running guest, over KDCOM
const dir = mkdtempSync(join(tmpdir(), "toolhost-winguest-"));
const guests = [];
const sims = [];
const clients = [];
const servers = [];
const KDNET_SIM = process.env.KDNET_SIM; // tests/kdnet-sim, which carries kd-sim's KD packets over KDNET

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const big = (s) => BigInt(s);
const hex = (v, width = 0) => big(v).toString(16).padStart(width, "0");
// WinDbg's 64-bit address form: fffff803`12000000.
const addr = (v) => hex(v, 16).slice(0, 8) + "`" + hex(v, 16).slice(8);

// Boots the guest; resolves with its sockets and the layout it reported.
async function boot(name, extra = []) {
  const base = join(dir, name);
  const g = { serial: base + ".serial", gdb: base + ".gdb", qmp: base + ".qmp", pidfile: base + ".pid" };
  const args = ["-m", "64M", "-serial", g.serial, "-gdb", g.gdb, "-qmp", g.qmp, "-pidfile", g.pidfile, "-timeout", "170"];
  g.child = spawn(join(GUEST, "run-winguest"), extra.length ? [...args, "--", ...extra] : args, {
    stdio: "ignore",
    detached: true,
  });
  guests.push(g);
  for (let i = 0; i < 300; i++) {
    if (existsSync(g.serial) && readFileSync(g.serial, "utf8").includes("toolhost-winguest: ready") && existsSync(g.pidfile))
      break;
    await sleep(100);
  }
  assert.match(readFileSync(g.serial, "utf8"), /toolhost-winguest: ready/, "the guest did not boot");
  g.pid = Number(readFileSync(g.pidfile, "utf8").trim());
  g.layout = JSON.parse(execFileSync(join(GUEST, "winguest-layout"), [g.serial], { encoding: "utf8" }));
  return g;
}

// QEMU's own translation of each address (HMP gva2gpa through QMP, on the vCPU's page tables).
async function gva2gpa(socket, addresses) {
  const sock = createConnection(socket);
  let buffer = "";
  const replies = [];
  sock.on("data", (d) => {
    buffer += d;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line) replies.push(JSON.parse(line));
    }
  });
  const next = async () => {
    for (let i = 0; i < 100; i++) {
      const j = replies.findIndex((r) => "return" in r || "error" in r || "QMP" in r);
      if (j >= 0) return replies.splice(j, 1)[0];
      await sleep(50);
    }
    throw new Error("QMP did not answer");
  };
  await next(); // greeting
  sock.write(JSON.stringify({ execute: "qmp_capabilities" }) + "\n");
  await next();
  const out = {};
  for (const a of addresses) {
    sock.write(JSON.stringify({ execute: "human-monitor-command", arguments: { "command-line": `gva2gpa 0x${hex(a)}` } }) + "\n");
    const r = await next();
    const m = /gpa: (?:0x)?([0-9a-f]+)/.exec(r.return);
    out[a] = m ? BigInt("0x" + m[1]) : null;
  }
  sock.end();
  await sleep(200); // QEMU's QMP socket serves one client at a time: let the backend have it
  return out;
}

// One line to kd-sim's control channel; resolves with its one-line answer.
function control(socket, line) {
  return new Promise((ok, fail) => {
    const sock = createConnection(socket);
    let answer = "";
    sock.on("error", fail);
    sock.on("data", (d) => {
      answer += d;
      if (answer.includes("\n")) {
        sock.end();
        ok(answer.trim());
      }
    });
    sock.write(line + "\n");
  });
}

// Starts kd-sim with `args`; resolves once it says ready.
async function start_kd_sim(args) {
  const sim = spawn(KD_SIM, args, { stdio: ["ignore", "pipe", "inherit"] });
  sims.push(sim);
  await new Promise((ok, fail) => {
    sim.stdout.once("data", (d) => (String(d).startsWith("ready") ? ok() : fail(new Error(String(d)))));
    sim.once("exit", (c) => fail(new Error(`kd-sim exited with ${c}`)));
  });
  return sim;
}

async function connect() {
  const config = join(dir, "toolhost.toml");
  writeFileSync(
    config,
    `plugin_dirs = [${JSON.stringify(PLUGINS)}]
default_server = "nt"
[servers.nt]
description = "issue 19 acceptance"
plugins = ["debugger", "gdb-backend", "memory-backend", "dump-backend", "kd-backend", "kdnet-backend"]
[servers.nt.settings.debugger]
symbol_path = ${JSON.stringify(GUEST)}
`,
  );
  const client = new Client({ name: "toolhost-winguest-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: TOOLHOST, args: ["--config", config], env: toolhostEnv(), stderr: "pipe" }));
  clients.push(client);
  return client;
}

const text = (r) => r.content.map((c) => c.text).join("");

// open on `backend` with `args` (connect, key...), asserted to succeed; kd and kdnet may attach
// over a lossy wire, which can take a while.
async function open_target(client, backend, args) {
  const r = await client.callTool({ name: "open", arguments: { backend, ...args } }, undefined, { timeout: 120000 });
  assert.notEqual(r.isError, true, text(r));
  return r;
}
async function run(client, line, format = "text", timeout_ms = 20000) {
  if (process.env.VERBOSE) console.error(new Date().toISOString(), line);
  const r = await client.callTool({ name: "command", arguments: { line, timeout_ms, format } }, undefined, {
    timeout: 120000,
  });
  return { text: text(r), error: r.isError === true, json: r.structuredContent };
}
const trailer = (t) => t.slice(t.lastIndexOf("[target"));

// A section of a PE file (its RVA and virtual size), read from the section table.
function section(file, name) {
  const b = readFileSync(file);
  const pe = b.readUInt32LE(0x3c);
  const count = b.readUInt16LE(pe + 6);
  let at = pe + 24 + b.readUInt16LE(pe + 20);
  for (let i = 0; i < count; i++, at += 40) {
    if (b.toString("latin1", at, at + 8).replace(/\0+$/, "") === name) return { rva: b.readUInt32LE(at + 12), size: b.readUInt32LE(at + 8) };
  }
  throw new Error(`${file} has no ${name} section`);
}

// The symbol-store keys of a PE file and of its PDB, from its header and its CodeView record:
// TimeDateStamp (%08X) + SizeOfImage (%x), and the PDB's GUID + age (%x), as symstore files them.
function store_keys(file) {
  const b = readFileSync(file);
  const pe = b.readUInt32LE(0x3c);
  const optional = pe + 24;
  const image = b.readUInt32LE(pe + 8).toString(16).toUpperCase().padStart(8, "0") + b.readUInt32LE(optional + 56).toString(16);
  const debug_rva = b.readUInt32LE(optional + 112 + 6 * 8);
  // The debug directory's file offset, through the section that holds it.
  const count = b.readUInt16LE(pe + 6);
  let at = optional + b.readUInt16LE(pe + 20);
  let debug = -1;
  for (let i = 0; i < count; i++, at += 40) {
    const va = b.readUInt32LE(at + 12), size = b.readUInt32LE(at + 16), raw = b.readUInt32LE(at + 20);
    if (debug_rva >= va && debug_rva < va + size) debug = raw + debug_rva - va;
  }
  const cv = b.readUInt32LE(debug + 24); // PointerToRawData of the first entry (CodeView)
  assert.equal(b.toString("latin1", cv, cv + 4), "RSDS", `${file}: no CodeView record`);
  const g = b.subarray(cv + 4, cv + 20);
  const guid =
    g.readUInt32LE(0).toString(16).padStart(8, "0") +
    g.readUInt16LE(4).toString(16).padStart(4, "0") +
    g.readUInt16LE(6).toString(16).padStart(4, "0") +
    g.subarray(8).toString("hex");
  const pdb = b.toString("latin1", cv + 24, b.indexOf(0, cv + 24)).split(/[\\/]/).pop();
  return { image, pdb, pdb_key: guid.toUpperCase() + b.readUInt32LE(cv + 20).toString(16) };
}

// A symbol server on loopback holding the guest's images and PDBs in a two-level store
// (<name>/<key>/<name>), logging each request.
async function symbol_server() {
  const root = join(dir, "store");
  for (const name of readdirSync(GUEST).filter((n) => /\.(exe|dll|sys)$/.test(n))) {
    const keys = store_keys(join(GUEST, name));
    for (const [file, key] of [[name, keys.image], [keys.pdb, keys.pdb_key]]) {
      mkdirSync(join(root, file, key), { recursive: true });
      copyFileSync(join(GUEST, file), join(root, file, key, file));
    }
  }
  const requests = [];
  const server = createServer((req, res) => {
    const file = join(root, decodeURIComponent(req.url));
    const found = !req.url.includes("..") && existsSync(file) && !file.endsWith("/");
    requests.push(`${req.url} ${found ? 200 : 404}`);
    const body = found ? readFileSync(file) : Buffer.alloc(0);
    res.writeHead(found ? 200 : 404, { "Content-Length": body.length });
    res.end(body);
  });
  servers.push(server);
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `http://127.0.0.1:${server.address().port}`, requests };
}

// db's bytes for bytes 16..31 of a process's page: byte k is (k * mul + add) & 0xff after the
// 16-byte signature.
function page_bytes(page) {
  const b = [];
  for (let k = 16; k < 32; k++) b.push(((k * Number(page.mul) + Number(page.add)) & 0xff).toString(16).padStart(2, "0"));
  return b.slice(0, 8).join(" ") + "-" + b.slice(8).join(" ");
}

// bp nt!NtCreateFile; g on a live backend: the stop names nt!NtCreateFile in the trailer, and k
// is the guest's known call chain up to it, every frame but the first unwound by .pdata.
async function break_at_nt_create_file(client, L) {
  const bp = await run(client, "bp nt!NtCreateFile");
  assert.equal(bp.error, false, bp.text);
  const hit = await run(client, "g");
  assert.match(trailer(hit.text), /^\[target halted @ 0 \S+ nt!NtCreateFile \| process System \(4\)\]/, hit.text);
  const k = await run(client, "k", "json");
  const chain = L.call_chain.slice(0, L.call_chain.indexOf("NtCreateFile") + 1).reverse();
  const frames = k.json.result.frames;
  assert.deepEqual(
    frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, "")),
    chain.map((f) => "nt!" + f),
    k.text,
  );
  assert.equal(frames[frames.length - 1].return_address, "0x0");
  assert.ok(frames.slice(1).every((f) => f.unwind === "pdata"), k.text);
}

// The checks every backend must pass: processes, scope, modules, dt, threads, !pte / !vtop.
async function inspect(client, g, backend, translations) {
  const L = g.layout;
  const all = await run(client, "!process 0 0", "json");
  assert.equal(all.error, false, all.text);
  assert.equal((all.text.match(/^PROCESS /gm) || []).length, L.processes.length, all.text);
  assert.equal(all.json.result.processes.length, L.processes.length);
  for (const p of L.processes) {
    const block = new RegExp(
      `PROCESS ${hex(p.eprocess, 16)}\\n    SessionId: \\S+  Cid: ${hex(p.pid, 4)}    Peb: [0-9a-f]+  ParentCid: ${hex(
        p.parent,
        4,
      )}\\n    DirBase: ${hex(p.dtb, 8)}  ObjectTable: [0-9a-f]+  HandleCount: [^\\n]+\\n    Image: ${p.name.replace(".", "\\.")}\\n`,
    );
    assert.match(all.text, block, `${backend}: ${p.name}`);
  }
  const csrss = await run(client, "!process 0 0 csrss.exe");
  assert.equal((csrss.text.match(/^PROCESS /gm) || []).length, 1, csrss.text);
  assert.match(csrss.text, /Image: csrss\.exe/);

  // The scope: each process's own page, through its page tables.
  const seen = new Set();
  for (const p of L.processes.filter((p) => p.user_page)) {
    const set = await run(client, `.process /p ${Number(big(p.pid))}`);
    assert.equal(set.error, false, set.text);
    assert.ok(trailer(set.text).includes(` | scope ${p.name} (${Number(big(p.pid))})]`), set.text);
    const db = await run(client, `db ${hex(big(p.user_page.va) + 16n)} L10`);
    assert.ok(db.text.includes(page_bytes(p.user_page)), `${backend} ${p.name}:\n${db.text}`);
    seen.add(page_bytes(p.user_page));
    const dt = await run(client, `dt nt!_EPROCESS ${hex(p.eprocess)} ImageFileName`);
    assert.ok(dt.text.includes(`"${p.name}"`), dt.text);
    // Its user modules, from its PEB's loader list.
    const lm = await run(client, "lm");
    for (const m of [p.name, "ntdll.dll"]) assert.match(lm.text, new RegExp(`\\s${m.slice(0, m.indexOf("."))}\\s`), lm.text);
  }
  assert.equal(seen.size, L.processes.filter((p) => p.user_page).length, "each process's page differs");
  const reset = await run(client, ".process 0");
  assert.ok(!trailer(reset.text).includes("| scope"), reset.text);

  // Kernel modules with their PDBs.
  await run(client, ".reload /f");
  const lm = await run(client, "lm");
  for (const m of L.modules) {
    const stem = m.name === "ntoskrnl.exe" ? "nt" : m.name.slice(0, m.name.indexOf("."));
    assert.match(lm.text, new RegExp(`^${addr(m.base)} \\S+\\s+${stem}\\s+\\(pdb symbols\\)`, "m"), lm.text);
  }

  // Threads: Cid and owning process.
  for (const p of L.processes) {
    for (const t of p.threads) {
      const th = await run(client, `!thread ${hex(t.ethread)}`);
      assert.ok(th.text.includes(`THREAD ${hex(t.ethread, 16)}  Cid ${hex(p.pid, 4)}.${hex(t.tid, 4)}`), th.text);
      assert.ok(th.text.includes(`Owning Process            ${hex(p.eprocess, 16)}       Image:         ${p.name}`), th.text);
    }
  }

  // !vtop and !pte against QEMU's gva2gpa on each page size; the not-present PTEs by name.
  for (const kind of ["4k", "2m", "1g", "paged_valid"]) {
    const va = L.pages[kind].va;
    const gpa = translations[va];
    assert.notEqual(gpa, null, `gva2gpa ${va}`);
    const vtop = await run(client, `!vtop 0 ${hex(va)}`);
    assert.ok(vtop.text.includes(`translates to physical address ${gpa.toString(16)}.`), `${backend} ${kind}:\n${vtop.text}`);
    const pte = await run(client, `!pte ${hex(va)}`);
    assert.match(pte.text, new RegExp(`pfn ${(gpa >> 12n).toString(16)}\\b`), `${backend} ${kind}:\n${pte.text}`);
  }
  const transition = await run(client, `!pte ${hex(L.pages.transition.va)}`);
  assert.ok(transition.text.includes(`Transition: ${(big(L.pages.transition.pa) >> 12n).toString(16)}`), transition.text);
  const paged = await run(client, `!pte ${hex(L.pages.paged_out.va)}`);
  assert.match(paged.text, /PageFile: /, paged.text);
  const version = await run(client, "vertarget");
  assert.ok(version.text.includes("Kernel base = 0x" + addr(L.kernel_base)), version.text);
}

before(() => {
  assert.ok(TOOLHOST && PLUGINS && GUEST && KD_SIM && KDNET_SIM, "TOOLHOST, PLUGINS_DIR, WINGUEST_DIR, KD_SIM and KDNET_SIM must be set");
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  for (const p of sims) p.kill();
  for (const s of servers) s.close();
  for (const g of guests) {
    try {
      process.kill(-g.child.pid, "SIGTERM");
    } catch {}
  }
  rmSync(dir, { recursive: true, force: true });
});

test("gdb, memory and a .dump /f of the guest: processes, scope, modules, threads, !pte/!vtop, bp and k", async () => {
  const g = await boot("plain");
  const L = g.layout;
  const translations = await gva2gpa(
    g.qmp,
    ["4k", "2m", "1g", "paged_valid"].map((k) => L.pages[k].va),
  );
  const client = await connect();

  // gdb: QEMU's gdbstub.
  await open_target(client, "gdb", { connect: g.gdb });
  await inspect(client, g, "gdb", translations);

  // Each processor's current thread.
  const cpus = await run(client, "~");
  assert.ok(cpus.text.includes(`.0  Processor 0  Thread ${addr(L.current_thread)}`), cpus.text);

  // bp nt!NtCreateFile through the PDB, the stop in the trailer, and k through .pdata.
  await break_at_nt_create_file(client, L);
  const kb = await run(client, "kb");
  assert.match(kb.text, /^Child-SP {10}RetAddr {15}: Args to Child/, kb.text);

  // bp /p: the loop runs in System only, so a breakpoint for smss.exe never stops; its hits are
  // resumed at once, between calls too (the guest is never left frozen). bp /t the same.
  await run(client, "bc *");
  const smss = L.processes.find((p) => p.name === "smss.exe");
  const system = L.processes.find((p) => Number(big(p.pid)) === 4);
  await run(client, `bp /p ${hex(smss.eprocess)} nt!NtCreateFile`);
  const away = await run(client, "g", "text", 1500);
  assert.match(away.text, /\[target running\]$/, away.text);
  const hits = async () => (await run(client, "bl", "json")).json.result.breakpoints[0];
  await sleep(500);
  const first = await hits();
  await sleep(1000);
  const later = await hits();
  assert.equal(later.hits, 0);
  assert.ok(first.foreign_hits > 0 && later.foreign_hits > first.foreign_hits, JSON.stringify([first, later]));
  await run(client, "break");
  await run(client, `bp /p ${hex(system.eprocess)} nt!NtCreateFile`);
  const ours = await run(client, "g");
  assert.match(trailer(ours.text), / nt!NtCreateFile \| process System \(4\)\]/, ours.text);
  await run(client, "bc *");
  await run(client, `bp /t ${hex(system.threads[1].ethread)} nt!NtCreateFile`);
  const other = await run(client, "g", "text", 1000);
  assert.match(other.text, /\[target running\]$/, other.text);
  await run(client, "break");
  await run(client, "bc *");
  await run(client, `bp /t ${hex(L.current_thread)} nt!NtCreateFile`);
  assert.match(trailer((await run(client, "g")).text), / nt!NtCreateFile \|/);

  // Every instruction of the loop: k stays the known chain through prologs and epilogs.
  await run(client, "bc *");
  const known = new Set(L.call_chain.map((f) => "nt!" + f));
  for (let i = 0; i < 40; i++) {
    await run(client, "t");
    const step = await run(client, "k", "json");
    const names = step.json.result.frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, ""));
    assert.equal(names[names.length - 1], "nt!KiStartSystemThread", step.text);
    assert.ok(names.every((n) => known.has(n)), step.text);
  }

  await client.callTool({ name: "close", arguments: {} });

  // memory: the VM's RAM, read while it runs; then a full dump of it for the dump backend (the
  // guest's structures do not change once it is ready).
  await open_target(client, "memory", { connect: `pid=${g.pid},qmp=${g.qmp}` });
  await inspect(client, g, "memory", translations);
  const file = join(dir, "winguest.dmp");
  const dump = await run(client, `.dump /f ${file}`);
  assert.equal(dump.error, false, dump.text);
  await client.callTool({ name: "close", arguments: {} });

  // dump: the .dump /f file.
  await open_target(client, "dump", { connect: file });
  await inspect(client, g, "dump", translations);
  await client.callTool({ name: "close", arguments: {} });
});

test("the encoded-KDBG guest: the KDBG is decoded with the keys in its memory; k with nt's .pdata paged out", async () => {
  const g = await boot("encoded", ["-append", "kdbg=encoded"]);
  assert.equal(g.layout.kdbg.encoded, true);
  const client = await connect();
  await open_target(client, "gdb", { connect: g.gdb });
  const version = await run(client, "vertarget", "json");
  assert.ok(version.text.includes(`KDBG at ${addr(g.layout.kdbg.address)} (encoded; decoded with KiWaitNever`), version.text);
  assert.equal(version.json.result.kdbg_encoded, true);
  const all = await run(client, "!process 0 0");
  assert.equal((all.text.match(/^PROCESS /gm) || []).length, g.layout.processes.length, all.text);

  // nt's .pdata paged out (its PTEs cleared; the guest never reads it): k takes the unwind data
  // from ntoskrnl.exe on the symbol path, found by TimeDateStamp and SizeOfImage, as WinDbg does.
  const pdata = section(join(GUEST, "ntoskrnl.exe"), ".pdata");
  for (let off = pdata.rva & ~0xfff; off < pdata.rva + pdata.size; off += 0x1000) {
    const va = big(g.layout.kernel_base) + BigInt(off);
    const pte = await run(client, `!pte ${hex(va)}`);
    const at = /PTE at ([0-9A-F]+)/.exec(pte.text);
    assert.ok(at, pte.text);
    const cleared = await run(client, `eq ${at[1]} 0`);
    assert.equal(cleared.error, false, cleared.text);
    const gone = await run(client, `dq ${hex(va)} L1`);
    assert.match(gone.text, /is not mapped: its PTE .* is not present/, gone.text);
  }
  await client.callTool({ name: "close", arguments: {} });
  const again = await client.callTool({ name: "open", arguments: { backend: "gdb", connect: g.gdb } });
  assert.notEqual(again.isError, true, text(again));
  await run(client, "bp nt!NtCreateFile");
  await run(client, "g");
  const k = await run(client, "k", "json");
  const chain = g.layout.call_chain.slice(0, g.layout.call_chain.indexOf("NtCreateFile") + 1).reverse();
  assert.deepEqual(
    k.json.result.frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, "")),
    chain.map((f) => "nt!" + f),
    k.text,
  );
  const lmv = await run(client, "lmv m nt");
  assert.match(lmv.text, /Unwind data: +from the image file on the symbol path/, lmv.text);

  // The same from a symbol server (srv*cache*URL), as WinDbg fetches a missing image: the store
  // key is the loaded header's TimeDateStamp and SizeOfImage.
  const store = await symbol_server();
  const nt_key = store_keys(join(GUEST, "ntoskrnl.exe")).image;
  const cache = join(dir, "symcache");
  const sympath = await run(client, `.sympath srv*${cache}*${store.url}`);
  assert.equal(sympath.error, false, sympath.text);
  await run(client, ".reload /f");
  const served = await run(client, "k", "json");
  assert.deepEqual(
    served.json.result.frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, "")),
    chain.map((f) => "nt!" + f),
    served.text,
  );
  assert.ok(served.json.result.frames.slice(1).every((f) => f.unwind === "pdata"), served.text);
  assert.ok(store.requests.includes(`/ntoskrnl.exe/${nt_key}/ntoskrnl.exe 200`), store.requests.join("\n"));
  assert.ok(existsSync(join(cache, "ntoskrnl.exe", nt_key, "ntoskrnl.exe")), "the image is kept in the cache");
  const served_lmv = await run(client, "lmv m nt");
  assert.ok(served_lmv.text.includes(`Unwind data:`) && served_lmv.text.includes(`${store.url}/ntoskrnl.exe/${nt_key}/ntoskrnl.exe`), served_lmv.text);
  await client.callTool({ name: "close", arguments: {} });
});

// kdnet-sim carrying a KDCOM target's packets to toolhost's KDNET listener on a free UDP port.
const KDNET_KEY = "1.z.10.3w5e11264sgsf";
async function kdnet_sim(kd_sock, seed, drop = 0.1, corrupt = 0.05) {
  const port = await new Promise((ok) => {
    const s = createSocket("udp4");
    s.bind(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => ok(p));
    });
  });
  const args = ["--port", String(port), "--key", KDNET_KEY, "--drop", String(drop), "--corrupt", String(corrupt), "--seed", String(seed)];
  const sim = spawn(KDNET_SIM, [...args, "--poke-ms", "500", "--kd-target", `unix:${kd_sock}`], { stdio: ["pipe", "pipe", "ignore"] });
  sims.push(sim);
  const lines = [];
  sim.stdout.on("data", (d) => lines.push(...String(d).split("\n").filter(Boolean)));
  const stats = async () => {
    const before = lines.length;
    sim.stdin.write("stats\n");
    for (let i = 0; i < 100 && lines.length === before; i++) await sleep(20);
    return JSON.parse(lines[lines.length - 1]);
  };
  const faults = (d, c) => sim.stdin.write(`faults ${d} ${c}\n`);
  return { connect: `127.0.0.1:${port}`, stats, faults };
}

test("kdnet (kdnet-sim carrying kd-sim's guest, 10% loss, 5% corruption): every check, k, the encoded KDBG, .reboot", async () => {
  const snapshot = join(dir, "kdnet-snapshot");
  execFileSync(join(GUEST, "winguest-snapshot"), [snapshot], { stdio: "ignore" });
  const L = JSON.parse(readFileSync(join(snapshot, "layout.json"), "utf8"));
  const kd = { sock: join(dir, "kdnet.kd.sock"), ctl: join(dir, "kdnet.kd.ctl") };
  await start_kd_sim(["--listen", `unix:${kd.sock}`, "--control", `unix:${kd.ctl}`, "--winguest", snapshot]);
  const net = await kdnet_sim(kd.sock, 19);
  const client = await connect();
  await open_target(client, "kdnet", { connect: net.connect, key: KDNET_KEY });

  // Round trips: the KD requests that reach the target for !process 0 0 after discovery (counted
  // by kd-sim), as the kd test counts them.
  const discovered = await run(client, "vertarget");
  assert.ok(discovered.text.includes("Kernel base = 0x" + addr(L.kernel_base)), discovered.text);
  await control(kd.ctl, "requests reset");
  const listed = await run(client, "!process 0 0");
  assert.equal((listed.text.match(/^PROCESS /gm) || []).length, L.processes.length, listed.text);
  const requests = Number(/total=(\d+)/.exec(await control(kd.ctl, "requests"))[1]);
  console.log(`kdnet: !process 0 0 cost ${requests} KD requests for ${L.processes.length} processes`);
  assert.ok(requests > 0 && requests <= 2 * L.processes.length + 4, `${requests} KD requests`);

  // The checks every backend passes; the guest's own report of each page's physical address is
  // what QEMU's gva2gpa gave the gdb test (the snapshot is the same machine, stopped).
  const translations = {};
  for (const kind of ["4k", "2m", "1g", "paged_valid"]) translations[L.pages[kind].va] = big(L.pages[kind].pa);
  await inspect(client, { layout: L }, "kdnet", translations);

  // The break-in stop's stack through .pdata.
  const k = await run(client, "k", "json");
  const names = k.json.result.frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, ""));
  assert.equal(names[names.length - 1], "nt!KiStartSystemThread", k.text);
  assert.ok(names.slice(1).every((n) => L.call_chain.includes(n.slice(3))), k.text);
  assert.ok(k.json.result.frames.slice(1).every((f) => f.unwind === "pdata"), k.text);

  // A break-in that lands on a leaf function's first instruction (QEMU stops a guest at the start
  // of a translation block, often a function's entry) reports that rip as DbgBreakPointWithStatus's
  // return address: made here from this stop, the same chain with nt!ExAllocatePoolWithTag (a leaf,
  // no .pdata entry) between them, as RtlVirtualUnwind walks it.
  const sp = big("0x" + /rsp=([0-9a-f]+)/.exec((await run(client, "r rsp")).text)[1]);
  assert.equal((await run(client, `r rsp=${hex(sp - 8n)}`)).error, false);
  assert.equal((await run(client, `eq ${hex(sp - 8n)} nt!ExAllocatePoolWithTag`)).error, false);
  const entry = await run(client, "k", "json");
  assert.deepEqual(
    entry.json.result.frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, "")),
    [names[0], "nt!ExAllocatePoolWithTag", ...names.slice(1)],
    entry.text,
  );
  assert.equal((await run(client, `r rsp=${hex(sp)}`)).error, false);

  // The wire really was lossy, and every KD packet crossed it.
  const s = await net.stats();
  assert.ok(s.dropped > 0 && s.corrupted > 0 && s.rejected > 0, JSON.stringify(s));
  console.log(`kdnet: ${s.relayed_requests} KD packets relayed, ${s.dropped} datagrams lost, ${s.corrupted} corrupted, ${s.retransmits} retransmits`);

  // After a reboot (kd-sim restarts its machine; kdnet keys a new session): "rediscovery pending"
  // until the kernel is found again at the next stop.
  const reboot = await run(client, ".reboot", "json");
  assert.match(trailer(reboot.text), /\| rediscovery pending\]$/, reboot.text);
  assert.equal(reboot.json.target.coherent, false);
  const stale = await run(client, "!process 0 0");
  assert.equal(stale.error, true);
  assert.match(stale.text, /rebooted and its kernel is not found again yet/);
  const step = await run(client, "t", "json");
  assert.match(trailer(step.text), /\| process System \(4\)\]$/, step.text);
  assert.equal(step.json.target.coherent, true);
  const again = await run(client, "!process 0 0");
  assert.equal((again.text.match(/^PROCESS /gm) || []).length, L.processes.length, again.text);
  assert.ok((await net.stats()).transport_restarts >= 1);
  await client.callTool({ name: "close", arguments: {} });

  // The encoded-KDBG guest over kdnet: decoded with the keys in its memory.
  const encoded = join(dir, "kdnet-encoded");
  execFileSync(join(GUEST, "winguest-snapshot"), [encoded, "--", "-append", "kdbg=encoded"], { stdio: "ignore" });
  const E = JSON.parse(readFileSync(join(encoded, "layout.json"), "utf8"));
  assert.equal(E.kdbg.encoded, true);
  const kd2 = { sock: join(dir, "kdnet-encoded.kd.sock") };
  await start_kd_sim(["--listen", `unix:${kd2.sock}`, "--winguest", encoded]);
  const net2 = await kdnet_sim(kd2.sock, 23);
  await open_target(client, "kdnet", { connect: net2.connect, key: KDNET_KEY });
  const version = await run(client, "vertarget", "json");
  assert.ok(version.text.includes(`KDBG at ${addr(E.kdbg.address)} (encoded; decoded with KiWaitNever`), version.text);
  assert.equal(version.json.result.kdbg_encoded, true);
  const all = await run(client, "!process 0 0");
  assert.equal((all.text.match(/^PROCESS /gm) || []).length, E.processes.length, all.text);
  await client.callTool({ name: "close", arguments: {} });
});

test("kd (kd-sim serving the guest, 10% loss, 5% corruption): processes, scope, k, and rediscovery after .reboot", async () => {
  const snapshot = join(dir, "snapshot");
  execFileSync(join(GUEST, "winguest-snapshot"), [snapshot], { stdio: "ignore" });
  const L = JSON.parse(readFileSync(join(snapshot, "layout.json"), "utf8"));
  const sock = join(dir, "kd.sock");
  await start_kd_sim(
    ["--listen", `unix:${sock}`, "--control", `unix:${join(dir, "kd.ctl")}`, "--winguest", snapshot, "--drop", "0.10", "--corrupt", "0.05", "--seed", "19"],
  );
  const client = await connect();
  await open_target(client, "kd", { connect: sock });

  const all = await run(client, "!process 0 0");
  assert.equal((all.text.match(/^PROCESS /gm) || []).length, L.processes.length, all.text);
  for (const p of L.processes) assert.ok(all.text.includes(`PROCESS ${hex(p.eprocess, 16)}`) && all.text.includes(`Image: ${p.name}`), all.text);

  // The break-in stop's stack through .pdata: DbgBreakPointWithStatus called from the loop.
  const k = await run(client, "k", "json");
  const names = k.json.result.frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, ""));
  assert.equal(names[names.length - 1], "nt!KiStartSystemThread", k.text);
  assert.ok(names.slice(1).every((n) => L.call_chain.includes(n.slice(3))), k.text);

  const csrss = L.processes.find((p) => p.name === "csrss.exe");
  const scoped = await run(client, `.process /p ${Number(big(csrss.pid))}`);
  assert.ok(trailer(scoped.text).includes(` | scope csrss.exe (${Number(big(csrss.pid))})]`), scoped.text);
  const db = await run(client, `db ${hex(big(csrss.user_page.va) + 16n)} L10`);
  assert.ok(db.text.includes(page_bytes(csrss.user_page)), db.text);

  // After a reboot: "rediscovery pending" until the kernel is found again at the next stop; the
  // old kernel's processes and the scope are not shown meanwhile.
  const reboot = await run(client, ".reboot", "json");
  assert.match(trailer(reboot.text), /\| rediscovery pending\]$/, reboot.text);
  assert.ok(!trailer(reboot.text).includes("| scope"), reboot.text);
  assert.equal(reboot.json.target.coherent, false);
  const stale = await run(client, "!process 0 0");
  assert.equal(stale.error, true);
  assert.match(stale.text, /rebooted and its kernel is not found again yet/);
  const step = await run(client, "t", "json");
  assert.ok(!step.text.includes("rediscovery pending"), step.text);
  assert.match(trailer(step.text), /\| process System \(4\)\]$/, step.text);
  assert.equal(step.json.target.coherent, true);
  const again = await run(client, "!process 0 0");
  assert.equal((again.text.match(/^PROCESS /gm) || []).length, L.processes.length, again.text);
  await client.callTool({ name: "close", arguments: {} });
});

test("kd live (kd-sim driving the running guest through QEMU's gdbstub, 10% loss, 5% corruption): bp nt!NtCreateFile, g, k, bp /p, and the inspection commands", async () => {
  const g = await boot("live");
  const L = g.layout;
  const translations = await gva2gpa(
    g.qmp,
    ["4k", "2m", "1g", "paged_valid"].map((k) => L.pages[k].va),
  );
  const sock = join(dir, "kd-live.sock");
  const ctl = join(dir, "kd-live.ctl");
  await start_kd_sim(["--qemu-gdb", g.gdb, "--listen", `unix:${sock}`, "--control", `unix:${ctl}`, "--seed", "19"]);
  const client = await connect();
  // Attaching over a lossy wire is the snapshot test's (it costs ~9 s of retransmissions); here
  // the wire turns lossy once attached.
  const attach = Date.now();
  await open_target(client, "kd", { connect: sock });
  console.log(`kd live, clean wire: open (break-in, discovery) took ${Date.now() - attach} ms`);
  assert.equal(await control(ctl, "faults 0.10 0.05 0 0 0"), "ok");
  // The break-in stopped the guest's own loop: its stack through .pdata.
  const k0 = await run(client, "k", "json");
  const names0 = k0.json.result.frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, ""));
  assert.equal(names0[0], "nt!DbgBreakPointWithStatus", k0.text);
  assert.equal(names0[names0.length - 1], "nt!KiStartSystemThread", k0.text);
  assert.ok(names0.slice(1).every((n) => L.call_chain.includes(n.slice(3))), k0.text);

  await inspect(client, g, "kd live", translations);

  // bp nt!NtCreateFile; g: the guest runs into it; k is the guest's call chain by .pdata.
  await control(ctl, "requests reset");
  const started = Date.now();
  await break_at_nt_create_file(client, L);
  console.log(`kd live, 10% loss / 5% corruption: bp nt!NtCreateFile; g; k took ${Date.now() - started} ms, ${await control(ctl, "requests")}`);
  // g again: the breakpoint is stepped off and hit on the next turn of the loop.
  const again = await run(client, "g");
  assert.match(trailer(again.text), / nt!NtCreateFile \| process System \(4\)\]/, again.text);

  // bp /p: hits in System (the only process that runs) are resumed in the background for a
  // breakpoint on smss.exe; one on System stops. On a clean wire: each background resume costs
  // a dozen round trips, and lost frames would only make this part slow.
  assert.equal(await control(ctl, "faults 0 0 0 0 0"), "ok");
  await run(client, "bc *");
  const smss = L.processes.find((p) => p.name === "smss.exe");
  const system = L.processes.find((p) => Number(big(p.pid)) === 4);
  await run(client, `bp /p ${hex(smss.eprocess)} nt!NtCreateFile`);
  const away = await run(client, "g", "text", 1500);
  assert.match(away.text, /\[target running\]$/, away.text);
  const hits = async () => (await run(client, "bl", "json")).json.result.breakpoints[0];
  let first = await hits();
  for (let i = 0; i < 100 && first.foreign_hits === 0; i++, await sleep(100)) first = await hits();
  let later = first;
  for (let i = 0; i < 100 && later.foreign_hits <= first.foreign_hits; i++, await sleep(100)) later = await hits();
  assert.equal(later.hits, 0);
  assert.ok(first.foreign_hits > 0 && later.foreign_hits > first.foreign_hits, JSON.stringify([first, later]));
  await run(client, "break");
  await run(client, "bc *");
  await run(client, `bp /p ${hex(system.eprocess)} nt!NtCreateFile`);
  await control(ctl, "requests reset");
  const clean = Date.now();
  const ours = await run(client, "g");
  assert.match(trailer(ours.text), / nt!NtCreateFile \| process System \(4\)\]/, ours.text);
  await run(client, "k");
  console.log(`kd live, clean wire: g to a bp /p breakpoint; k took ${Date.now() - clean} ms, ${await control(ctl, "requests")}`);
  // As Windows' KdpReadVirtualMemory does, memory reads show a breakpoint's int3 while it is in
  // place; at the stop the kernel has taken out the ones in the reported instruction stream.
  const stopped_at = await run(client, "db nt!NtCreateFile L1");
  assert.match(stopped_at.text, /^\S+  56 /m, stopped_at.text); // push rsi
  await run(client, "bp nt!ExAllocatePoolWithTag");
  const planted = await run(client, "db nt!ExAllocatePoolWithTag L1");
  assert.match(planted.text, /^\S+  cc /m, planted.text);
  const leaf = await run(client, "g");
  assert.match(trailer(leaf.text), / nt!ExAllocatePoolWithTag \| process System \(4\)\]/, leaf.text);
  await client.callTool({ name: "close", arguments: {} });
});

test("kdnet live (kdnet-sim carrying kd-sim driving the running guest, 10% loss, 5% corruption): bp nt!NtCreateFile, g, k", async () => {
  const g = await boot("kdnet-live");
  const L = g.layout;
  const sock = join(dir, "kdnet-live.kd.sock");
  const ctl = join(dir, "kdnet-live.kd.ctl");
  await start_kd_sim(["--qemu-gdb", g.gdb, "--listen", `unix:${sock}`, "--control", `unix:${ctl}`]);
  // Attached on a clean wire (a lossy attach is the snapshot test's); then the datagrams are lost
  // and corrupted.
  const net = await kdnet_sim(sock, 29, 0, 0);
  const client = await connect();
  await open_target(client, "kdnet", { connect: net.connect, key: KDNET_KEY });
  net.faults(0.1, 0.05);
  const k0 = await run(client, "k", "json");
  const names0 = k0.json.result.frames.map((f) => f.symbol.replace(/\+0x[0-9a-f]+$/, ""));
  assert.equal(names0[0], "nt!DbgBreakPointWithStatus", k0.text);
  assert.equal(names0[names0.length - 1], "nt!KiStartSystemThread", k0.text);

  // bp nt!NtCreateFile; g: the guest runs into it; k is its call chain by .pdata.
  await control(ctl, "requests reset");
  await break_at_nt_create_file(client, L);
  console.log(`kdnet live, 10% loss / 5% corruption: bp nt!NtCreateFile; g; k: ${await control(ctl, "requests")}`);
  const again = await run(client, "g");
  assert.match(trailer(again.text), / nt!NtCreateFile \| process System \(4\)\]/, again.text);
  const all = await run(client, "!process 0 0");
  assert.equal((all.text.match(/^PROCESS /gm) || []).length, L.processes.length, all.text);
  const s = await net.stats();
  assert.ok(s.dropped > 0 && s.corrupted > 0, JSON.stringify(s));
  await run(client, "bc *");
  await client.callTool({ name: "close", arguments: {} });
});
