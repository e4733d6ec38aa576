// toolhost over Streamable HTTP as the official MCP TypeScript SDK client uses it: the
// permission question of an "ask" row (elicitation on the POST's stream), progress,
// cancellation, unrelated notifications on the GET stream, and ending the session.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp, stop } from "./http_server.mjs";

async function connect(url, answer) {
  const client = new Client({ name: "http-sdk-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return answer;
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport, asked };
}

test("an ask row over HTTP: accepted runs the tool with progress, declined refuses it", async () => {
  const server = await startHttp(["--server", "example-ask"]);
  try {
    const yes = await connect(server.url, { action: "accept", content: { approve: true } });
    const progress = [];
    const res = await yes.client.callTool({ name: "count", arguments: { to: 3, delay_ms: 20 } }, CallToolResultSchema,
                                          { onprogress: (p) => progress.push(p.progress) });
    assert.deepEqual(res.structuredContent, { counted: 3, completed: true });
    assert.equal(yes.asked.length, 1);
    assert.match(yes.asked[0].message, /Count numbers/);
    assert.ok(progress.length >= 2, `progress seen: ${progress}`);
    await yes.client.close();

    const no = await connect(server.url, { action: "decline" });
    const refused = await no.client.callTool({ name: "count", arguments: { to: 3 } });
    assert.equal(refused.isError, true);
    assert.equal(no.asked.length, 1);
    await no.client.close();
    assert.match(server.stderr(), /allowed count \(Count numbers, ask: accepted\)/);
  } finally {
    await stop(server);
  }
});

test("cancelling a call over HTTP stops it, and the session goes on", async () => {
  const server = await startHttp(["--server", "example-ask", "--log-level", "debug"]);
  try {
    const { client } = await connect(server.url, { action: "accept", content: { approve: true } });
    const ac = new AbortController();
    let steps = 0;
    const call = client.callTool({ name: "count", arguments: { to: 100000, delay_ms: 20 } }, CallToolResultSchema, {
      signal: ac.signal,
      onprogress: () => {
        if (++steps === 3) ac.abort("enough");
      },
    });
    await assert.rejects(call);
    for (let i = 0; i < 50 && !/client cancelled count/.test(server.stderr()); i++) await new Promise((r) => setTimeout(r, 20));
    assert.match(server.stderr(), /client cancelled count/, "notifications/cancelled reached the call");
    const after = await client.callTool({ name: "count", arguments: { to: 2 } });
    assert.deepEqual(after.structuredContent, { counted: 2, completed: true });
    assert.deepEqual(await client.ping(), {});
    await client.close();
  } finally {
    await stop(server);
  }
});

test("terminateSession sends DELETE and the session is gone", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const { client, transport } = await connect(server.url, { action: "cancel" });
    const id = transport.sessionId;
    assert.match(id, /^[0-9a-f]{32}$/);
    const updated = new Promise((resolve) => {
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri));
    });
    // test://watched-resource changes every 3 s; the SDK client hears about it on its GET stream.
    await client.subscribeResource({ uri: "test://watched-resource" });
    assert.equal(await Promise.race([updated, new Promise((r) => setTimeout(() => r("nothing within 8 s"), 8000))]),
                 "test://watched-resource");
    await transport.terminateSession();
    const res = await fetch(server.url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", "Mcp-Session-Id": id },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    assert.equal(res.status, 404);
    await client.close();
  } finally {
    await stop(server);
  }
});
