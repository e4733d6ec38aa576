// Windows symbols through toolhost over MCP stdio with the official TypeScript SDK client: a
// kernel dump holding the fixture images, a loopback symbol server, progress notifications
// during the first download and none the second time, help for every symbol command.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, writeFileSync, rmSync, mkdirSync, copyFileSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toolhostEnv } from "../toolhost_env.mjs";

const { TOOLHOST, PLUGINS_DIR, MAKE_DUMP, FIXTURES, PDBUTIL } = process.env;
const dir = mkdtempSync(join(tmpdir(), "toolhost-symbols-mcp-"));
const clients = [];
let server;

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  if (server) server.close();
  rmSync(dir, { recursive: true, force: true });
});

// The store key of a PDB: its GUID's hex digits and its age, from llvm-pdbutil.
function keyOf(pdb) {
  const out = spawnSync(PDBUTIL, ["dump", "-summary", pdb], { encoding: "utf8" }).stdout;
  const guid = /GUID: \{([0-9A-F-]+)\}/.exec(out)[1].replaceAll("-", "");
  const age = Number(/Age: (\d+)/.exec(out)[1]);
  return guid + age.toString(16).toUpperCase();
}

function startStore(root) {
  const requests = [];
  return new Promise((resolve) => {
    server = createServer((req, res) => {
      requests.push(req.url);
      const file = join(root, decodeURIComponent(req.url));
      if (!req.url.includes("..") && existsSync(file)) {
        const body = readFileSync(file);
        res.writeHead(200, { "Content-Length": body.length });
        res.end(body);
      } else {
        res.writeHead(404, { "Content-Length": 0 });
        res.end();
      }
    });
    server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}`, requests }));
  });
}

async function connect(symbolPath) {
  const config = join(dir, "toolhost.toml");
  writeFileSync(
    config,
    `plugin_dirs = [${JSON.stringify(PLUGINS_DIR)}]
default_server = "dbg"
[servers.dbg]
description = "symbol tests"
plugins = ["debugger", "dump-backend"]
[servers.dbg.settings.debugger]
symbol_path = ${JSON.stringify(symbolPath)}
`,
  );
  const client = new Client({ name: "toolhost-symbols-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: TOOLHOST, args: ["--config", config, "--server", "dbg"], env: toolhostEnv(), stderr: "pipe" }));
  clients.push(client);
  return client;
}

async function cmd(client, line, options = {}) {
  const args = { line, timeout_ms: 30000 };
  if (options.format) args.format = options.format;
  const r = await client.callTool({ name: "command", arguments: args }, undefined, options.onprogress ? { onprogress: options.onprogress } : {});
  return { text: r.content.map((c) => c.text).join(""), error: r.isError === true, structured: r.structuredContent };
}

test("the first .reload /f downloads with progress, the second uses the cache", async () => {
  const store = join(dir, "store");
  const key = keyOf(join(FIXTURES, "wsfix.pdb"));
  mkdirSync(join(store, "wsfix.pdb", key), { recursive: true });
  copyFileSync(join(FIXTURES, "wsfix.pdb"), join(store, "wsfix.pdb", key, "wsfix.pdb"));
  const { url, requests } = await startStore(store);
  const dump = join(dir, "kernel.dmp");
  assert.equal(spawnSync(MAKE_DUMP, [dump]).status, 0);
  const cache = join(dir, "cache");
  const client = await connect(`srv*${cache}*${url}`);
  const opened = await client.callTool({ name: "open", arguments: { backend: "dump", connect: dump } });
  assert.equal(opened.isError, undefined, JSON.stringify(opened));

  const progress = [];
  const first = await cmd(client, ".reload /f wsfix", { onprogress: (p) => progress.push(p) });
  assert.equal(first.error, false, first.text);
  assert.match(first.text, /wsfix {6}\(pdb symbols\) +\S+wsfix\.pdb/);
  assert.ok(progress.length > 0, "progress notifications during the download");
  assert.match(progress.at(-1).message, /Downloading symbols for wsfix from http:\/\/127\.0\.0\.1:\d+\/wsfix\.pdb\//);
  assert.ok(requests.includes(`/wsfix.pdb/${key}/wsfix.pdb`), requests.join(","));
  assert.ok(existsSync(join(cache, "wsfix.pdb", key, "wsfix.pdb")));

  requests.length = 0;
  const again = await cmd(client, ".reload /f wsfix");
  assert.match(again.text, /wsfix {6}\(pdb symbols\)/);
  assert.deepEqual(requests, []);

  const dt = await cmd(client, "dt wsfix!_WS_HEADER", { format: "json" });
  assert.equal(dt.structured.result.type, "wsfix!_WS_HEADER");
  assert.ok(dt.structured.result.fields.some((f) => f.name === "WaitListHead" && f.type === "_LIST_ENTRY"));
  const x = await cmd(client, "x wsfix!Nt*", { format: "json" });
  assert.ok(x.structured.result.symbols.length >= 3);
  const lm = await cmd(client, "lm", { format: "json" });
  assert.equal(lm.structured.result.modules.find((m) => m.name === "wsfix").symbols, "pdb symbols");
});

test("help lists every symbol command with its usage", async () => {
  const client = await connect("");
  const help = (await client.callTool({ name: "command", arguments: { line: "help" } })).content[0].text;
  for (const c of ["lm", ".reload", "ld", ".sympath", ".symfix", "x", "ln", "dt", "dqs", "bu", "u", "uf"]) {
    assert.match(help, new RegExp(`^  ${c.replace(".", "\\.")}[ ,]`, "m"), c);
    const one = (await client.callTool({ name: "command", arguments: { line: `.help ${c}` } })).content[0].text;
    assert.match(one, /^Usage: /, c);
  }
});
