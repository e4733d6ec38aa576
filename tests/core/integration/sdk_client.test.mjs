// The example plugin through toolhost, driven by the official MCP TypeScript SDK client:
// listing, calling, progress, cancellation, and every permission setting.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, sleep } from "./harness.mjs";

test("the example tool is listed with its schema and permission-independent metadata", async () => {
  const { client } = await connect();
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["count"]);
  assert.equal(tools[0].inputSchema.required[0], "to");
  assert.equal(tools[0].annotations.readOnlyHint, true);
  assert.equal(client.getServerVersion().name, "toolhost");
  await client.close();
});

test("calling it returns text and structured content", async () => {
  const { client } = await connect();
  const res = await client.callTool({ name: "count", arguments: { to: 4 } });
  assert.equal(res.isError, undefined);
  assert.deepEqual(res.structuredContent, { counted: 4, completed: true });
  assert.equal(res.content[0].text, "Counted to 4.");
  await client.close();
});

test("progress notifications reach a client that asked for them", async (t) => {
  const { client, received } = await connect();
  // Closed whatever the assertions say: a toolhost left running keeps the test file alive.
  t.after(() => client.close());
  const seen = [];
  const res = await client.callTool({ name: "count", arguments: { to: 5, delay_ms: 10 } }, CallToolResultSchema, {
    onprogress: (p) => seen.push(p),
  });
  assert.deepEqual(res.structuredContent, { counted: 5, completed: true });
  // On the wire: every step, in order, each before the result.
  const wire = received.filter((m) => m.method === "notifications/progress").map((m) => m.params);
  assert.deepEqual(wire.map((p) => p.progress), [1, 2, 3, 4, 5]);
  assert.ok(wire.every((p) => p.total === 5 && p.message.startsWith("counted to")));
  // The SDK hands them to onprogress asynchronously and stops at the response, so the last one
  // may race the result there; the first ones always arrive.
  assert.ok(seen.length >= 4, `onprogress saw ${seen.length}`);
  assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3, 4, 5].slice(0, seen.length));
});

test("a cancelled call stops and sends no result", async () => {
  const { client, received } = await connect();
  const ac = new AbortController();
  const progress = [];
  const pending = client.callTool({ name: "count", arguments: { to: 1000, delay_ms: 20 } }, CallToolResultSchema, {
    signal: ac.signal,
    onprogress: (p) => progress.push(p.progress),
  });
  await sleep(200);
  ac.abort("the test cancels");
  await assert.rejects(pending);
  await sleep(300);
  const afterCancel = progress.length;
  await sleep(400);
  assert.equal(progress.length, afterCancel, "progress went on after the cancellation");
  assert.ok(afterCancel > 0 && afterCancel < 1000);
  const results = received.filter((m) => m.id !== undefined && m.result && "content" in m.result);
  assert.equal(results.length, 0, "a result arrived for the cancelled call");
  // The session is still usable.
  const res = await client.callTool({ name: "count", arguments: { to: 1 } });
  assert.deepEqual(res.structuredContent, { counted: 1, completed: true });
  await client.close();
});

test("an ask row answered accept runs the tool", async () => {
  let asked = null;
  const { client, stderr } = await connect({
    server: "example-ask",
    capabilities: { elicitation: {} },
    onElicit: async (req) => {
      asked = req.params;
      return { action: "accept", content: { approve: true } };
    },
  });
  const res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.deepEqual(res.structuredContent, { counted: 2, completed: true });
  assert.match(asked.message, /count/);
  assert.match(asked.message, /Count numbers/);
  assert.equal(asked.requestedSchema.properties.approve.type, "boolean");
  await client.close();
  assert.match(stderr(), /allowed count \(Count numbers, ask: accepted\)/);
});

test("an ask row answered decline refuses the call", async () => {
  const { client, stderr } = await connect({
    server: "example-ask",
    capabilities: { elicitation: {} },
    onElicit: async () => ({ action: "decline" }),
  });
  const res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.equal(res.isError, true);
  assert.match(res.content[0].text, /The user did not allow count .*"Count numbers".*decline/);
  await client.close();
  assert.match(stderr(), /refused count \(Count numbers, ask: decline\)/);
});

test("an ask row with a client that cannot be asked is refused, never approved", async () => {
  const { client } = await connect({ server: "example-ask" });
  const res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.equal(res.isError, true);
  assert.match(res.content[0].text, /cannot ask the user/);
  assert.match(res.content[0].text, /"example\.count"/);
  await client.close();
});

test("a never row is refused naming the row", async () => {
  const { client } = await connect({ server: "example-never" });
  const res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.equal(res.isError, true);
  assert.match(res.content[0].text, /permission row "Count numbers" is set to Never/);
  await client.close();
});

test("the question shows the call's arguments, and 'allow for this session' stops the asking until the client leaves", async () => {
  const questions = [];
  const open = () =>
    connect({
      server: "example-ask",
      capabilities: { elicitation: {} },
      onElicit: async (req) => {
        questions.push(req.params);
        return { action: "accept", content: { approve: true, for_session: true } };
      },
    });
  let { client, stderr } = await open();
  let res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.deepEqual(res.structuredContent, { counted: 2, completed: true });
  assert.equal(questions.length, 1);
  assert.equal(questions[0].message, "Allow count to: 2?\n(Count numbers; server example-ask)");
  const form = questions[0].requestedSchema.properties;
  assert.equal(form.for_session.type, "boolean");
  assert.equal(form.for_session.title, "Allow for this session");
  res = await client.callTool({ name: "count", arguments: { to: 3 } });
  assert.deepEqual(res.structuredContent, { counted: 3, completed: true });
  assert.equal(questions.length, 1, "asked again after 'allow for this session'");
  await client.close();
  assert.match(stderr(), /allowed count \(Count numbers, ask: accepted for this session\)/);
  assert.match(stderr(), /allowed count \(Count numbers, ask: allowed for this session\)/);
  // A new session asks again: the answer was for one session, not written anywhere.
  ({ client } = await open());
  await client.callTool({ name: "count", arguments: { to: 1 } });
  assert.equal(questions.length, 2);
  await client.close();
});

test("approving once without 'for this session' asks again at the next call", async () => {
  let asked = 0;
  const { client } = await connect({
    server: "example-ask",
    capabilities: { elicitation: {} },
    onElicit: async () => {
      asked++;
      return { action: "accept", content: { approve: true } };
    },
  });
  await client.callTool({ name: "count", arguments: { to: 1 } });
  await client.callTool({ name: "count", arguments: { to: 1 } });
  assert.equal(asked, 2);
  await client.close();
});

test("--allow and --deny set one permission row for one run; an overlay names only the rows that differ", async () => {
  // A client that cannot be asked (the Inspector) gets the ask row's tool with --allow.
  let { client } = await connect({ server: "example-ask", args: ["--allow", "example.count"] });
  let res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.deepEqual(res.structuredContent, { counted: 2, completed: true });
  await client.close();
  // Without it, the refusal names the flag as a way out.
  ({ client } = await connect({ server: "example-ask" }));
  res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.equal(res.isError, true);
  assert.match(res.content[0].text, /--allow example\.count/);
  await client.close();
  ({ client } = await connect({ server: "example", args: ["--deny", "example.count"] }));
  res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.equal(res.isError, true);
  assert.match(res.content[0].text, /"Count numbers" is set to Never/);
  await client.close();

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-overlay-"));
  const overlay = path.join(dir, "mine.toml");
  fs.writeFileSync(overlay, '[servers.example-never.permissions]\n"example.count" = "allow"\n');
  ({ client } = await connect({ server: "example-never", args: ["--overlay", overlay] }));
  res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.deepEqual(res.structuredContent, { counted: 2, completed: true });
  await client.close();
  // The flags win over the overlay, and the overlay over the config.
  ({ client } = await connect({ server: "example-never", args: ["--overlay", overlay, "--deny", "example.count"] }));
  res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.equal(res.isError, true);
  await client.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
