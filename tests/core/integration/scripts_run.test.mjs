// ./scripts/run as an MCP client spawns it: stdout carries JSON-RPC alone, whatever the setup
// and the build do first, and a start with nothing to build prints no build output at all.
// It builds the folder this test runs from (TOOLHOST_BUILD_DIR), so it checks the real script.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";

const SOURCE_DIR = process.env.SOURCE_DIR;
const BUILD_DIR = process.env.BUILD_DIR;

const INPUT =
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"scripts-run-test","version":"1"}}}\n' +
  '{"jsonrpc":"2.0","method":"notifications/initialized"}\n' +
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n';

// Runs ./scripts/run with the three messages on stdin and closes stdin once tools/list is answered.
function runScript(args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(SOURCE_DIR, "scripts", "run"), args, {
      env: { ...process.env, TOOLHOST_BUILD_DIR: BUILD_DIR },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "", err = "";
    const timer = setTimeout(() => child.stdin.end(), 600000);
    child.stdout.on("data", (d) => {
      out += d;
      if (out.split("\n").some((l) => l.startsWith('{"jsonrpc":"2.0","id":2,'))) child.stdin.end();
    });
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: out, stderr: err });
    });
    child.stdin.write(INPUT);
  });
}

function checkProtocolOnly(r) {
  const lines = r.stdout.split("\n");
  assert.equal(lines.pop(), "", "stdout ends with a newline");
  const messages = lines.map((line) => {
    let m;
    assert.doesNotThrow(() => (m = JSON.parse(line)), `not JSON-RPC on stdout: ${line}`);
    assert.equal(m.jsonrpc, "2.0", `not JSON-RPC on stdout: ${line}`);
    return m;
  });
  assert.equal(messages[0].id, 1, "the initialize result comes first");
  assert.ok(messages[0].result.protocolVersion);
  const list = messages.find((m) => m.id === 2);
  assert.ok(list, `no tools/list answer; stderr:\n${r.stderr}`);
  return list.result.tools.map((t) => t.name);
}

test("./scripts/run writes only JSON-RPC to stdout, and a start with nothing to build prints no build output", async () => {
  // The first start may build (whatever is out of date goes to stderr); the second has nothing to do.
  const first = await runScript();
  const tools = checkProtocolOnly(first);
  assert.ok(tools.includes("open_function"), `the default server is eleven: ${tools}`);
  const second = await runScript();
  assert.deepEqual(checkProtocolOnly(second), tools);
  const buildLines = second.stderr.split("\n").filter((l) => /^\[\d+\/\d+\]|^ninja|^-- |cmake|^setup:/.test(l));
  assert.deepEqual(buildLines, [], "a start with nothing to build printed build output");
});

test("arguments after ./scripts/run go to toolhost", async () => {
  const r = await runScript(["--server", "ntoseye"]);
  const tools = checkProtocolOnly(r);
  assert.ok(tools.includes("command") && !tools.includes("open_function"), `ntoseye's tools: ${tools}`);
});
