// The official MCP TypeScript SDK client 2.x (@modelcontextprotocol/client) connected to a
// toolhost serving `sdk2` (tests/sdk-v2/sdk_v2.toml.in), over stdio or Streamable HTTP, with
// every message on the wire kept: what the tests of this folder share.
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/client/stdio";
import { startHttp, stop } from "../http/http_server.mjs";
import { isolationEnv } from "../toolhost_env.mjs";

export const TOOLHOST = process.env.TOOLHOST;
export const CONFIG = process.env.HTTP_TEST_CONFIG;
export const VERSION = "2026-07-28";
export const CLIENT_INFO = { name: "toolhost-sdk2-test", version: "1.0.0" };
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts toolhost (debug log, so that cancellations show) on `kind` ("stdio" or "http"), or
// uses the HTTP endpoint `url` another open() started, and connects a client negotiating `mode`
// with `capabilities`. `answers` are what the person says
// to each elicitation, in turn. Keeps every message on the wire, and the HTTP request headers of
// each POST. `intercept(message)`, when set on the result, sees each incoming message after it
// is kept and before the client does; true keeps it from the client (a response to a request
// the client did not send).
export async function open(kind, { mode = { pin: VERSION }, answers = [], capabilities = { elicitation: { form: {} } },
                                   url = null } = {}) {
  const args = ["--server", "sdk2", "--log-level", "debug"];
  let server = null;
  let transport;
  const posts = [];
  if (kind === "http") {
    if (!url) server = await startHttp(args);
    const recording = (url, init) => {
      posts.push(new Headers(init?.headers));
      return fetch(url, init);
    };
    transport = new StreamableHTTPClientTransport(new URL(url ?? server.url), { fetch: recording });
  } else {
    transport = new StdioClientTransport({ command: TOOLHOST, args: ["--config", CONFIG, ...args],
                                           env: { ...getDefaultEnvironment(), ...isolationEnv() }, stderr: "pipe" });
  }
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  const client = new Client(CLIENT_INFO, { capabilities, versionNegotiation: { mode } });
  const asked = [];
  client.setRequestHandler("elicitation/create", async (req) => {
    asked.push(req.params);
    return answers.shift() ?? { action: "cancel" };
  });
  await client.connect(transport);
  const c = { client, transport, wire: [], asked, posts, intercept: null, url: url ?? server?.url };
  const send = transport.send.bind(transport);
  transport.send = (m, o) => {
    c.wire.push({ out: true, m });
    return send(m, o);
  };
  const deliver = transport.onmessage;
  transport.onmessage = (m, extra) => {
    c.wire.push({ out: false, m });
    if (c.intercept?.(m)) return;
    deliver?.(m, extra);
  };
  c.log = () => (server ? server.stderr() : stderr);
  c.close = async () => {
    await client.close();
    if (server) await stop(server);
  };
  return c;
}

export const approve = { action: "accept", content: { approve: true } };
export const sent = (wire, method) => wire.filter((w) => w.out && w.m.method === method).map((w) => w.m);
export const answerTo = (wire, id) =>
  wire.find((w) => !w.out && w.m.id === id && ("result" in w.m || "error" in w.m))?.m;

export async function until(what, check, ms = 5000) {
  for (let waited = 0; waited < ms; waited += 20) {
    if (check()) return;
    await sleep(20);
  }
  assert.fail(`${what} did not happen within ${ms} ms`);
}
