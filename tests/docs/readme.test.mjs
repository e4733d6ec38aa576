// The README's commands, run as a new user would type them: every line of every ```sh block, every
// client entry of every ```json block, and every ```toml block through check-config. A command
// that no rule here knows how to run fails the test, so a command added to the README without a
// way to check it is caught.
//
// The blocks run in a scratch folder laid out like a checkout (build/bin, config/), with fixed
// ports replaced by free ones (other tests run at the same time) and `npx
// @modelcontextprotocol/inspector` by the Inspector of tests/node_modules (no download).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toolhostEnv } from "../toolhost_env.mjs";

const SOURCE_DIR = process.env.SOURCE_DIR;
const BUILD_DIR = process.env.BUILD_DIR;
const INSPECTOR = path.join(SOURCE_DIR, "tests", "node_modules", ".bin", "mcp-inspector");
const README = fs.readFileSync(path.join(SOURCE_DIR, "README.md"), "utf8");

// ```lang blocks with the heading they sit under.
function blocks(text) {
  const out = [];
  let heading = "";
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (/^#+ /.test(lines[i])) heading = lines[i].replace(/^#+ /, "");
    const open = lines[i].match(/^```(\w+)\s*$/);
    if (!open) continue;
    const body = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]);
    out.push({ lang: open[1], heading, body: body.join("\n"), line: i - body.length });
  }
  return out;
}
const all = blocks(README);

// A scratch checkout: build/bin is the real build's, config/ the real configs.
const root = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-readme-"));
fs.chmodSync(root, 0o755);
fs.mkdirSync(path.join(root, "build"));
fs.symlinkSync(path.join(BUILD_DIR, "bin"), path.join(root, "build", "bin"));
fs.symlinkSync(path.join(BUILD_DIR, "plugins"), path.join(root, "build", "plugins"));
fs.symlinkSync(path.join(SOURCE_DIR, "config"), path.join(root, "config"));
const jobs = [];
// Background commands run in a process group of their own, so that ending one ends what it
// started too (gdbserver's inferior, a server's upstreams), which would otherwise hold our pipes.
// gdbserver gives its inferior a group of its own, so its descendants are ended by pid as well.
function descendants(pid) {
  const out = [];
  try {
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      for (const child of fs.readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean)) {
        out.push(Number(child), ...descendants(Number(child)));
      }
    }
  } catch {}
  return out;
}
const stop = (child, signal) => {
  const all = descendants(child.pid);
  try {
    process.kill(-child.pid, signal);
  } catch {}
  for (const pid of all) {
    try {
      process.kill(pid, signal);
    } catch {}
  }
};
after(() => {
  for (const j of jobs) stop(j, "SIGKILL");
  fs.rmSync(root, { recursive: true, force: true });
});

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

// The README's placeholders and fixed ports made real for this run.
async function localize(text, ports) {
  let out = text.replaceAll("/path/to/toolhost/", `${root}/`).replaceAll("npx @modelcontextprotocol/inspector", INSPECTOR);
  for (const fixed of [...new Set(out.match(/127\.0\.0\.1:\d{4,5}/g) ?? [])]) {
    if (fixed.endsWith(":0")) continue;
    if (!ports.has(fixed)) ports.set(fixed, `127.0.0.1:${await freePort()}`);
    out = out.replaceAll(fixed, ports.get(fixed));
  }
  return out;
}

// The environment of every command: the build's toolhost on PATH, and npm kept offline (a
// README command that would download something fails instead).
const commandEnv = () => ({ ...process.env, PATH: `${root}/build/bin:${process.env.PATH}`, npm_config_offline: "true" });

// Runs one command line with bash in the scratch checkout; resolves with what it printed.
function sh(line, { input = "", cwd = root, timeout = 120000 } = {}) {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", line], { cwd, env: commandEnv() });
    let stdout = "", stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeout);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // Most commands never read their input and may exit before it is written: EPIPE then is no
    // fault of theirs (it failed this test in CI as an uncaught exception).
    child.stdin.on("error", () => {});
    child.stdin.end(input);
  });
}

// A command that keeps running (a server): started, and ready once `ready` appears on stderr.
function background(line, ready) {
  const child = spawn("bash", ["-c", `exec ${line}`], { cwd: root, env: commandEnv(), detached: true });
  jobs.push(child);
  let stderr = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready: ${line}\n${stderr}`)), 30000);
    const seen = (d) => {
      stderr += d;
      if (ready.test(stderr)) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stderr.on("data", seen);
    child.stdout.on("data", seen);
    child.on("exit", (code) => reject(new Error(`exited with ${code} before it was ready: ${line}\n${stderr}`)));
  });
}

// An Inspector CLI answer: JSON, and not a tool error.
function inspectorAnswer(r, line) {
  assert.equal(r.code, 0, `${line}\n${r.stdout}${r.stderr}`);
  const answer = JSON.parse(r.stdout);
  assert.notEqual(answer.isError, true, `${line}\n${r.stdout}`);
  return answer;
}

// Lists a server's tools the way a client spawns it: command, args, env.
async function listTools({ command, args = [], env = {} }) {
  const client = new Client({ name: "readme-test", version: "1" }, { capabilities: {} });
  const transport = new StdioClientTransport({ command, args, env: toolhostEnv(env), cwd: os.tmpdir(), stderr: "pipe" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  await client.close();
  return tools.map((t) => t.name);
}

// How each kind of line is run. Every sh line must match one rule.
const rules = [
  // What CI runs and what core.integration: scripts_run runs (a clean stdout, a silent no-op build).
  { re: /^\.\/scripts\/(test|run)( |$)/, run: async () => "covered by ./scripts/test itself and core.integration: scripts_run" },
  // cmake --install is what core.install runs on this build.
  { re: /^cmake --install build --prefix DIR$/, run: async () => "covered by core.install" },
  // claude mcp add [-e K=V]... NAME -- COMMAND ARGS: the part after -- is what Claude Code spawns.
  {
    re: /^claude mcp add /,
    run: async (line) => {
      const [before, after] = line.split(" -- ");
      const env = Object.fromEntries([...before.matchAll(/-e (\S+?)=(\S+)/g)].map((m) => [m[1], m[2]]));
      const [command, ...args] = after.split(/\s+/);
      const tools = await listTools({ command, args, env });
      assert.ok(tools.length > 0, line);
    },
  },
  // The window at the socket the client entries name: eleven_window_integration starts it so, twice.
  { re: /^build\/bin\/toolhost-window serve \S+ --socket \S+$/, run: async () => "covered by eleven_window_integration (a window restarted at the same --socket)" },
  { re: /^gdbserver .*&$/, run: async (line) => background(line.replace(/&$/, ""), /Listening on port/) },
  {
    // A server: in the background with `&`; otherwise it is stopped once it serves, as a user
    // who tried it would stop it before typing the next line.
    re: /toolhost .*--http \S+ ?&?$/,
    run: async (line) => {
      const child = await background(line.replace(/&$/, ""), /serving .*http:\/\/127\.0\.0\.1:\d+\S*\/mcp/);
      if (line.endsWith("&")) return;
      const exited = new Promise((r) => child.on("exit", r));
      stop(child, "SIGTERM");
      await exited;
    },
  },
  { re: /^kill %\d( %\d)*$/, run: async () => "the jobs end with the block" },
  { re: /\/mcp-inspector --cli /, run: async (line, cwd) => inspectorAnswer(await sh(line, { cwd }), line) },
  {
    re: /^build\/bin\/toolhost (check-config|tools) /,
    run: async (line, cwd) => {
      const r = await sh(line, { cwd });
      assert.equal(r.code, 0, `${line}\n${r.stdout}${r.stderr}`);
    },
  },
  {
    // gdb as the README says: `run` typed on its stdin, then the protocol, which toolhost reads.
    re: /^gdb --args /,
    run: async (line, cwd) => {
      const child = spawn("bash", ["-c", line], { cwd, env: commandEnv() });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (out += d));
      const closed = new Promise((r) => child.on("close", r));
      child.stdin.on("error", () => {});  // gdb gone early: the assertions below show its output
      child.stdin.write("run\n");
      const end = Date.now() + 60000;
      while (!/Starting program/.test(out) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "gdb", version: "1" } } };
      child.stdin.write(JSON.stringify(init) + "\n");
      while (!/"id":1,"result":\{/.test(out) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      child.stdin.end();
      setTimeout(() => child.kill("SIGKILL"), 20000).unref();
      await closed;
      assert.match(out, /"id":1,"result":\{"protocolVersion"/, `${line}\n${out}`);
      assert.match(out, /exited normally/, `${line}\n${out}`);
    },
  },
];

async function runShellBlock(block, cwd = root) {
  const ports = new Map();
  const started = jobs.length;
  try {
    for (const raw of block.body.split("\n")) {
      const line = (await localize(raw.replace(/\s+#.*$/, ""), ports)).trim();
      if (line === "" || line.startsWith("#")) continue;
      const rule = rules.find((r) => r.re.test(line));
      assert.ok(rule, `README.md:${block.line} (${block.heading}): no rule of tests/docs/readme.test.mjs runs \`${raw}\``);
      await rule.run(line, cwd);
    }
  } finally {
    for (const j of jobs.splice(started)) {
      stop(j, "SIGTERM");
      setTimeout(() => stop(j, "SIGKILL"), 5000).unref();
    }
  }
}

test("the README has the blocks a new user follows", () => {
  const headings = new Set(all.map((b) => b.heading));
  for (const h of ["Adding toolhost to an MCP client", "Trying ntoseye by hand", "Writing a plugin", "Serving over HTTP (MCP Streamable HTTP)"]) {
    assert.ok(headings.has(h), `no command block under "${h}"`);
  }
});

test("every client entry in the README's JSON starts its server and lists tools", async () => {
  let entries = 0;
  for (const block of all.filter((b) => b.lang === "json")) {
    const doc = JSON.parse(await localize(block.body, new Map()));
    const table = doc.mcpServers ?? doc.servers;
    assert.ok(table, `README.md:${block.line}: a JSON block that is no client config`);
    for (const [name, entry] of Object.entries(table)) {
      const tools = await listTools(entry);
      assert.ok(tools.length > 0, `${name}: no tools`);
      entries++;
    }
  }
  assert.ok(entries >= 3);
});

test("every TOML block of the configuration section passes check-config", async () => {
  for (const block of all.filter((b) => b.lang === "toml" && b.heading !== "Writing a plugin")) {
    const file = path.join(root, `block-${block.line}.toml`);
    fs.writeFileSync(file, block.body + "\n");
    // A full file is checked alone; an overlay over the default config.
    const args = /^plugin_dirs/m.test(block.body) ? ["check-config", "--config", file] : ["check-config", "--config", "config/toolhost.toml", "--overlay", file];
    const r = await sh(["build/bin/toolhost", ...args].join(" "));
    assert.equal(r.code, 0, `README.md:${block.line} (${block.heading})\n${r.stdout}${r.stderr}`);
  }
});

for (const block of all.filter((b) => b.lang === "sh" && b.heading !== "Writing a plugin")) {
  test(`README.md:${block.line} (${block.heading}): every command runs`, async () => {
    await runShellBlock(block);
  });
}

test("Writing a plugin: the README's plugin builds, and its config, commands and gdb line work", async () => {
  const cpp = all.find((b) => b.lang === "cpp" && b.heading === "Writing a plugin");
  const toml = all.find((b) => b.lang === "toml" && b.heading === "Writing a plugin");
  assert.ok(cpp && toml);
  const dir = path.join(root, "hello");
  fs.mkdirSync(path.join(dir, "build", "plugins"), { recursive: true });
  fs.chmodSync(dir, 0o755);
  fs.symlinkSync(path.join(BUILD_DIR, "bin"), path.join(dir, "build", "bin"));
  fs.writeFileSync(path.join(dir, "hello.cpp"), cpp.body + "\n");
  fs.writeFileSync(path.join(dir, "hello.toml"), toml.body + "\n");
  // As toolhost_add_plugin builds it: C++20, position-independent, Abseil from the host.
  execFileSync(process.env.CXX || "c++", ["-std=c++20", "-O1", "-shared", "-fPIC", `-I${path.join(SOURCE_DIR, "plugin-sdk", "include")}`,
                       "-o", path.join(dir, "build", "plugins", "hello.so"), path.join(dir, "hello.cpp")], { stdio: "inherit" });
  fs.chmodSync(path.join(dir, "build", "plugins"), 0o755);
  for (const block of all.filter((b) => b.lang === "sh" && b.heading === "Writing a plugin")) await runShellBlock(block, dir);
  const r = await sh(`${INSPECTOR} --cli --tool-arg name=Ada --method tools/call --tool-name hello -- build/bin/toolhost --config hello.toml`, { cwd: dir });
  assert.equal(inspectorAnswer(r, "hello").content[0].text, "Hello, Ada!");
});
