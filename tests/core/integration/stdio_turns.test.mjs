// Over stdio one thread reads the client's messages and calls run on workers (host/transport/
// stdio.cpp, host/mcp/worker_pool.cpp): a call that runs long must not hold up the messages
// after it, a cancellation must still reach it, and requests sent together run side by side.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { TOOLHOST, EXAMPLE_CONFIG, sleep } from "./harness.mjs";

const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}\n';

function start() {
  const child = spawn(TOOLHOST, ["--config", EXAMPLE_CONFIG, "--server", "example"], { stdio: ["pipe", "pipe", "pipe"] });
  const lines = [];
  let partial = "";
  child.stdout.on("data", (d) => {
    partial += d;
    let nl;
    while ((nl = partial.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(partial.slice(0, nl)));
      partial = partial.slice(nl + 1);
    }
  });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, lines, exited };
}

async function answerTo(lines, id, ms = 15000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const found = lines.findIndex((m) => m.id === id && (m.result !== undefined || m.error !== undefined));
    if (found >= 0) return found;
    await sleep(5);
  }
  assert.fail(`no answer to request ${id} within ${ms} ms`);
}

// toolhost, initialized; `close` ends its input and checks that it exits cleanly.
async function initialized() {
  const s = start();
  s.child.stdin.write(INIT);
  await answerTo(s.lines, 1);
  s.close = async () => {
    s.child.stdin.end();
    assert.equal(await s.exited, 0);
  };
  return s;
}

const count = (id, to, delay) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "count", arguments: { to, delay_ms: delay } } }) + "\n";

test("a long call does not hold up the requests that come while it runs", async () => {
  const { child, lines, close } = await initialized();
  child.stdin.write(count(2, 5, 200)); // a second or so
  await sleep(50);
  child.stdin.write('{"jsonrpc":"2.0","id":3,"method":"ping"}\n');
  child.stdin.write('{"jsonrpc":"2.0","id":4,"method":"tools/list"}\n');
  const ping = await answerTo(lines, 3);
  const list = await answerTo(lines, 4);
  const call = await answerTo(lines, 2);
  assert.ok(ping < call && list < call, "the ping and tools/list were answered only after the long call");
  assert.match(lines[call].result.content[0].text, /Counted to 5\./);
  await close();
});

test("a cancellation reaches a call while it runs, and the session goes on", async () => {
  const { child, lines, close } = await initialized();
  child.stdin.write(count(2, 50, 200)); // ten seconds unless cancelled
  await sleep(100);
  child.stdin.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"test"}}\n');
  child.stdin.write(count(3, 2, 0));
  const after = await answerTo(lines, 3, 5000);
  assert.match(lines[after].result.content[0].text, /Counted to 2\./);
  // A cancelled request gets no answer (MCP): nothing for id 2 arrives, even after its steps.
  await sleep(500);
  assert.equal(lines.findIndex((m) => m.id === 2 && m.result !== undefined), -1);
  await close();
});

test("requests sent together run side by side", async () => {
  const { child, lines, close } = await initialized();
  // One write: the second is read while the first runs, so it goes to a worker of its own and
  // ends first, though it was sent second.
  child.stdin.write(count(2, 4, 250) + count(3, 1, 50));
  const slow = await answerTo(lines, 2);
  const quick = await answerTo(lines, 3);
  assert.ok(quick < slow, "the quick call waited for the slow one");
  await close();
});
