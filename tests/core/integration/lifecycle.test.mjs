// How toolhost starts and stops: stdin closing, SIGTERM, its parent dying, bad configs and
// disabled servers; and plugin output kept off the protocol stream.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { TOOLHOST, EXAMPLE_CONFIG, FIXTURES_CONFIG, sleep } from "./harness.mjs";

const run = promisify(execFile);
const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}\n';

function start(args) {
  const child = spawn(TOOLHOST, args, { stdio: ["pipe", "pipe", "pipe"] });
  const io = { out: "", err: "" };
  child.stdout.on("data", (d) => (io.out += d));
  child.stderr.on("data", (d) => (io.err += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, io, exited };
}

async function waitFor(pred, ms = 10000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(20);
  }
  return false;
}

test("toolhost exits when stdin closes", async () => {
  const { child, io, exited } = start(["--config", EXAMPLE_CONFIG, "--server", "example"]);
  child.stdin.write(INIT);
  assert.ok(await waitFor(() => io.out.includes('"id":1')));
  child.stdin.end();
  const { code } = await exited;
  assert.equal(code, 0);
});

test("toolhost finishes a running call, then exits, on SIGTERM", async () => {
  const { child, io, exited } = start(["--config", EXAMPLE_CONFIG, "--server", "example"]);
  child.stdin.write(INIT);
  child.stdin.write('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{"to":5,"delay_ms":100}}}\n');
  await sleep(150);
  child.kill("SIGTERM");
  const { code, signal } = await exited;
  assert.equal(signal, null);
  assert.equal(code, 0);
  assert.match(io.out, /"id":2,"result":\{"content":\[\{"type":"text","text":"Counted to 5\."/);
});

test("toolhost exits when its parent dies", async () => {
  const pidFile = path.join(os.tmpdir(), `toolhost-child-${process.pid}`);
  // A shell parent that starts toolhost, records its pid, and is then killed.
  // toolhost's stdin is the shell's, a pipe this test holds open: only the parent's death can end it.
  const parent = spawn("/bin/sh", ["-c", `"$0" --config "$1" --server example 0<&0 & echo $! > "$2"; wait`, TOOLHOST, EXAMPLE_CONFIG, pidFile], {
    stdio: ["pipe", "ignore", "ignore"],
  });
  assert.ok(await waitFor(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim() !== ""));
  const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
  await sleep(200);
  parent.kill("SIGKILL");
  const gone = await waitFor(() => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  });
  fs.rmSync(pidFile, { force: true });
  assert.ok(gone, "toolhost outlived its parent");
});

test("toolhost keeps serving when the thread of its parent that started it ends", async () => {
  // A parent whose threads come and go (a toolhost whose rea-filter starts another toolhost from a
  // worker thread) must not look like a parent that died: PR_SET_PDEATHSIG would fire here.
  // The thread starts toolhost, sees it answer initialize (so it is serving), and ends.
  const script = `
import subprocess, sys, threading, time
box = {}
def start():
    p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(sys.stdin.buffer.readline()); p.stdin.flush()
    box.update(p=p, first=p.stdout.readline().decode().strip())
t = threading.Thread(target=start)
t.start(); t.join()
time.sleep(1.5)
p = box["p"]
print(box["first"])
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\\n'); p.stdin.flush()
print(p.stdout.readline().decode().strip()); p.stdin.close(); print("exit", p.wait(timeout=30))
`;
  const { stdout } = await new Promise((resolve, reject) => {
    const child = execFile("python3", ["-c", script, TOOLHOST, "--config", EXAMPLE_CONFIG, "--server", "example"], { timeout: 60000 }, (e, out) => (e ? reject(e) : resolve({ stdout: out })));
    child.stdin.end(INIT);
  });
  assert.match(stdout, /"id":1,"result":\{"protocolVersion"/);
  assert.match(stdout, /"id":2,"result":\{"tools":\[/);
  assert.match(stdout, /exit 0/);
});

test("a bad config line is named with file:line:column and the host does not start", async () => {
  const file = path.join(os.tmpdir(), `toolhost-bad-${process.pid}.toml`);
  fs.writeFileSync(file, '[servers.x]\nplugins = ["example"]\nreview_edits = "yes"\n');
  await assert.rejects(run(TOOLHOST, ["--config", file, "--server", "x"]), (e) => {
    assert.equal(e.code, 2);
    assert.match(e.stderr, new RegExp(`${file.replace(/[.]/g, "\\.")}:3:16: servers\\.x\\.review_edits: expected true or false`));
    return true;
  });
  fs.rmSync(file, { force: true });
});

test("a disabled server is not served, with the reason", async () => {
  await assert.rejects(run(TOOLHOST, ["--config", EXAMPLE_CONFIG, "--server", "example-off"]), (e) => {
    assert.equal(e.code, 2);
    assert.match(e.stderr, /server 'example-off' is disabled \(enabled = false/);
    return true;
  });
});

test("what plugins print never reaches stdout", async () => {
  const { child, io, exited } = start(["--config", FIXTURES_CONFIG, "--server", "fixtures"]);
  child.stdin.write(INIT);
  child.stdin.write('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fixture_echo","arguments":{"text":"x"}}}\n');
  assert.ok(await waitFor(() => io.out.includes('"id":2')));
  child.stdin.end();
  await exited;
  for (const line of io.out.split("\n").filter(Boolean)) assert.doesNotThrow(() => JSON.parse(line), line);
  assert.match(io.err, /fixture noise on stdout from init/);
  assert.match(io.err, /fixture noise on stdout from a tool call/);
});
