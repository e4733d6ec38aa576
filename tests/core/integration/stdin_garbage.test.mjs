// 10,000 lines of random bytes and malformed JSON on stdin never crash the host, stdout only
// ever carries JSON-RPC, and every well-formed request among them still gets its answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { TOOLHOST, EXAMPLE_CONFIG } from "./harness.mjs";

// A small deterministic generator, so a failure can be replayed.
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

const MALFORMED = [
  "{", "}", "[", "[]", "null", "42", '"str"', "{}", '{"jsonrpc":"2.0"}', '{"jsonrpc":"2.0","id":null,"method":"ping"}',
  '{"jsonrpc":"2.0","id":{},"method":"ping"}', '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
  '{"jsonrpc":"2.0","method":7}', '{"jsonrpc":"2.0","id":"x","method":"tools/call","params":[]}',
  '{"jsonrpc":"2.0","id":"y","method":"tools/call","params":{"name":5}}', '{"jsonrpc":2,"id":1,"method":"ping"}',
  '{"jsonrpc":"2.0","id":"z","method":"tools/call","params":{"name":"count","arguments":{"to":-1}}}',
  '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nobody"}}',
  '{"jsonrpc":"2.0","id":99999,"result":{}}', '{"a":1,,}', '\u0000\u0001', "\ud800", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
];

test("garbage on stdin: no crash, clean stdout, every real request answered", async () => {
  const child = spawn(TOOLHOST, ["--config", EXAMPLE_CONFIG, "--server", "example"], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", () => {});
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

  const random = rng(20261130);
  const expected = new Set();
  const lines = [
    '{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}',
  ];
  expected.add("init");
  for (let i = 0; i < 10000; i++) {
    const r = random();
    if (i % 10 === 0) {
      const id = `req-${i}`;
      expected.add(id);
      lines.push(
        r < 0.5
          ? JSON.stringify({ jsonrpc: "2.0", id, method: "ping" })
          : JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "count", arguments: { to: 2 } } }),
      );
    } else if (r < 0.5) {
      const len = Math.floor(random() * 200);
      const bytes = Buffer.alloc(len);
      for (let j = 0; j < len; j++) {
        let b = Math.floor(random() * 256);
        if (b === 10) b = 11; // keep it on one line
        bytes[j] = b;
      }
      lines.push(bytes.toString("latin1"));
    } else {
      lines.push(MALFORMED[Math.floor(random() * MALFORMED.length)]);
    }
  }
  for (const l of lines) child.stdin.write(Buffer.from(l + "\n", "latin1"));

  const deadline = Date.now() + 60000;
  const answered = new Set();
  while (Date.now() < deadline) {
    answered.clear();
    for (const line of out.split("\n")) {
      if (!line) continue;
      const msg = JSON.parse(line); // throws if stdout ever carries something that is not JSON
      assert.equal(msg.jsonrpc, "2.0");
      if (typeof msg.id === "string" && expected.has(msg.id)) {
        assert.ok(msg.result !== undefined, `request ${msg.id} failed: ${JSON.stringify(msg.error)}`);
        answered.add(msg.id);
      }
    }
    if (answered.size === expected.size) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(answered.size, expected.size, `${expected.size - answered.size} well-formed requests unanswered`);
  child.stdin.end();
  const { code, signal } = await exited;
  assert.equal(signal, null, "the host died on a signal");
  assert.equal(code, 0);
});
