// Streamable HTTP against hostile or unlucky clients: descriptor exhaustion, the connection cap,
// header and idle deadlines, clients that never read, one session flooding the workers, clients
// that hang up, initialize floods, subscriptions to anything, and malformed request heads. Each
// test is one fault an outside probe found; each asserts what the client or the operator sees.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { startHttp, stop } from "./http_server.mjs";

const ACCEPT = "application/json, text/event-stream";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function request(url, { method = "POST", headers = {}, body, timeout = 15000, agent = false } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (data += d));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.setTimeout(timeout, () => req.destroy(new Error(`no answer within ${timeout} ms`)));
    req.on("error", reject);
    if (body !== undefined) req.write(typeof body === "string" ? body : JSON.stringify(body));
    req.end();
  });
}

function headers(session, extra = {}) {
  return { "Content-Type": "application/json", Accept: ACCEPT, ...(session ? { "Mcp-Session-Id": session } : {}), ...extra };
}

const INIT = { jsonrpc: "2.0", id: 0, method: "initialize",
               params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "limits-test", version: "1" } } };

async function initialize(url, options = {}) {
  const res = await request(url, { headers: headers(null), body: INIT, ...options });
  assert.equal(res.status, 200, res.body);
  const session = res.headers["mcp-session-id"];
  const ack = await request(url, { headers: headers(session), body: { jsonrpc: "2.0", method: "notifications/initialized" }, ...options });
  assert.equal(ack.status, 202);
  return session;
}

function answer(res) {
  if ((res.headers["content-type"] ?? "").startsWith("application/json")) return JSON.parse(res.body);
  const data = [...res.body.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]));
  return data.find((m) => m.id !== undefined && m.method === undefined);
}

// utime + stime of a process, in seconds; resident memory in KiB; threads.
function cpuSeconds(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;  // clock ticks, 100 per second on Linux
}
function status(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return { rssKiB: Number(text.match(/^VmRSS:\s+(\d+)/m)[1]), threads: Number(text.match(/^Threads:\s+(\d+)/m)[1]) };
}

// A raw connection: what it was sent back, and when the server closed it.
function rawConnection(port, text = "") {
  const started = Date.now();
  const sock = net.connect(port, "127.0.0.1");
  const conn = { sock, data: "", closedAfterMs: null };
  conn.closed = new Promise((resolve) => {
    sock.on("close", () => {
      conn.closedAfterMs = Date.now() - started;
      resolve(conn);
    });
  });
  sock.on("error", () => {});
  sock.on("data", (d) => (conn.data += d));
  conn.opened = new Promise((resolve) => sock.on("connect", resolve));
  if (text) sock.write(text);
  return conn;
}

async function rawRequest(port, text) {
  const conn = rawConnection(port, text);
  await Promise.race([conn.closed, sleep(5000)]);
  conn.sock.destroy();
  const status = Number(conn.data.match(/^HTTP\/1\.1 (\d+)/)?.[1] ?? 0);
  const body = conn.data.slice(conn.data.indexOf("\r\n\r\n") + 4);
  return { status, raw: conn.data, body };
}

test("out of descriptors: the listener backs off instead of spinning, and a new client is still served", async () => {
  const server = await startHttp(["--server", "conformance"], {}, { nofile: 256 });
  const idle = [];
  try {
    for (let i = 0; i < 400; i++) idle.push(rawConnection(server.port));
    await Promise.all(idle.map((c) => Promise.race([c.opened, c.closed])));
    const before = cpuSeconds(server.child.pid);
    await sleep(3000);
    const used = cpuSeconds(server.child.pid) - before;
    console.log(`server CPU during 3 s with 400 idle sockets at a limit of 256 descriptors: ${used.toFixed(2)} s`);
    assert.ok(used < 0.5, `the server used ${used} s of CPU in 3 s while idle sockets waited`);
    const session = await initialize(server.url, { timeout: 5000 });
    const res = await request(server.url, { headers: headers(session), timeout: 5000,
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "test_simple_text", arguments: {} } } });
    assert.equal(answer(res).result.content[0].text, "This is a simple text response for testing.");
  } finally {
    for (const c of idle) c.sock.destroy();
    await stop(server);
  }
});

test("at the connection cap with every connection working, a newcomer gets 503 and a sentence, logged once", async () => {
  // 64 descriptors: three quarters of them, 48, may be connections.
  const server = await startHttp(["--server", "example"], {}, { nofile: 64 });
  const busy = [];
  try {
    const session = await initialize(server.url);
    // 48 long calls, each holding its connection open while it runs.
    for (let i = 0; i < 48; i++) {
      const body = JSON.stringify({ jsonrpc: "2.0", id: 100 + i, method: "tools/call", params: { name: "count", arguments: { to: 1, delay_ms: 10000 } } });
      busy.push(rawConnection(server.port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\n` +
                                         `Accept: ${ACCEPT}\r\nMcp-Session-Id: ${session}\r\nContent-Length: ${body.length}\r\n\r\n${body}`));
      await busy.at(-1).opened;
    }
    await sleep(500);
    const refusals = [];
    for (let i = 0; i < 10; i++) {
      refusals.push(await rawRequest(server.port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\n` +
                                                  `Accept: ${ACCEPT}\r\nContent-Length: ${JSON.stringify(INIT).length}\r\n\r\n${JSON.stringify(INIT)}`));
    }
    for (const r of refusals) {
      assert.equal(r.status, 503, r.raw.slice(0, 300));
      assert.match(JSON.parse(r.body).error.message, /connection limit/);
    }
    await sleep(200);
    const lines = server.stderr().split("\n").filter((l) => /refused a connection/.test(l));
    assert.equal(lines.length, 1, `one log line for ten refusals:\n${lines.join("\n")}`);
  } finally {
    for (const c of busy) c.sock.destroy();
    await stop(server);
  }
});

test("headers must come within 10 s and a kept-alive connection may idle 15 s: neither waits for the 30 s body deadline", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const silent = rawConnection(server.port);
    const partial = rawConnection(server.port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n`);
    const kept = rawConnection(server.port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\n` +
                                            `Accept: ${ACCEPT}\r\nContent-Length: ${JSON.stringify(INIT).length}\r\n\r\n${JSON.stringify(INIT)}`);
    // A slowloris client: one header byte a second keeps it sending, never finishing.
    const trickle = rawConnection(server.port);
    await trickle.opened;
    const timer = setInterval(() => trickle.sock.write("X"), 1000);
    trickle.sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nX-Slow: `);
    const all = await Promise.race([Promise.all([silent.closed, partial.closed, kept.closed, trickle.closed]), sleep(28000).then(() => null)]);
    clearInterval(timer);
    assert.ok(all, `not all closed within 28 s: silent ${silent.closedAfterMs}, partial ${partial.closedAfterMs}, ` +
                   `kept ${kept.closedAfterMs}, trickle ${trickle.closedAfterMs}`);
    console.log(`closed after (ms): silent ${silent.closedAfterMs}, partial ${partial.closedAfterMs}, ` +
                `slowloris ${trickle.closedAfterMs}, kept-alive ${kept.closedAfterMs}`);
    for (const c of [silent, partial, trickle]) assert.ok(c.closedAfterMs < 14000, `header deadline: ${c.closedAfterMs} ms`);
    assert.match(kept.data, /^HTTP\/1\.1 200 OK/, "the complete request was answered");
    assert.ok(kept.closedAfterMs >= 14000 && kept.closedAfterMs < 25000, `idle deadline: ${kept.closedAfterMs} ms`);
  } finally {
    await stop(server);
  }
});

test("a client that never reads a million progress events costs bounded memory, freed when its session ends", async () => {
  const server = await startHttp(["--server", "example"]);
  try {
    const session = await initialize(server.url);
    await request(server.url, { headers: headers(session),
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "count", arguments: { to: 10 }, _meta: { progressToken: 1 } } } });
    await sleep(2500);  // the sweep returns start-up garbage
    const base = status(server.child.pid).rssKiB;
    const body = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call",
                                  params: { name: "count", arguments: { to: 1000000 }, _meta: { progressToken: "p" } } });
    const reader = rawConnection(server.port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\n` +
                                              `Accept: ${ACCEPT}\r\nMcp-Session-Id: ${session}\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await reader.opened;
    reader.sock.pause();  // never reads: the kernel's buffers fill, then the server's
    let peak = 0;
    let cpu = -1;
    for (let i = 0; i < 120; i++) {  // until the count is done: the server's CPU stops moving
      await sleep(250);
      peak = Math.max(peak, status(server.child.pid).rssKiB);
      const now = cpuSeconds(server.child.pid);
      if (now === cpu) break;
      cpu = now;
    }
    const del = await request(server.url, { method: "DELETE", headers: { "Mcp-Session-Id": session } });
    assert.equal(del.status, 200);
    reader.sock.destroy();
    await sleep(3000);
    const after = status(server.child.pid).rssKiB;
    console.log(`RSS KiB: before ${base}, peak ${peak}, after the session ended ${after}`);
    assert.ok(peak - base < 32 * 1024, `a never-read stream grew the server by ${peak - base} KiB`);
    assert.ok(after - base < 8 * 1024, `${after - base} KiB stayed after the session ended`);
  } finally {
    await stop(server);
  }
});

test("one session's flood of long calls is capped per session; another session is served at once", async () => {
  const server = await startHttp(["--server", "example"]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
  try {
    const [greedy, other] = await Promise.all([initialize(server.url), initialize(server.url)]);
    const calls = [];
    for (let i = 0; i < 80; i++) {
      calls.push(request(server.url, { agent, headers: headers(greedy), timeout: 30000,
        body: { jsonrpc: "2.0", id: 1000 + i, method: "tools/call", params: { name: "count", arguments: { to: 1, delay_ms: 3000 } } } }));
    }
    await sleep(500);
    const res = await request(server.url, { headers: headers(other), timeout: 5000,
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "count", arguments: { to: 1 } } } });
    assert.deepEqual(answer(res).result.structuredContent, { counted: 1, completed: true });
    const answers = (await Promise.all(calls)).map(answer);
    const refused = answers.filter((a) => a.error);
    assert.equal(refused.length, 16, "64 of the 80 run, the rest are refused");
    assert.match(refused[0].error.message, /Too many requests in flight: this session already has 64 running/);
    assert.equal(answers.filter((a) => a.result?.structuredContent?.completed).length, 64);
  } finally {
    agent.destroy();
    await stop(server);
  }
});

test("a client that hangs up cancels the call it started: at once, or after 10 s when it could resume the stream", async () => {
  const server = await startHttp(["--server", "example", "--log-level", "debug"]);
  try {
    const session = await initialize(server.url);
    const post = (id, meta) => {
      const body = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call",
                                    params: { name: "count", arguments: { to: 1000, delay_ms: 50 }, ...(meta ? { _meta: meta } : {}) } });
      return rawConnection(server.port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\n` +
                                        `Accept: ${ACCEPT}\r\nMcp-Session-Id: ${session}\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    };
    const plain = post(7);
    const streamed = post(8, { progressToken: "t" });
    await sleep(500);
    assert.match(streamed.data, /id: \d+-\d+/, "the progress stream sent event ids");
    plain.sock.destroy();
    streamed.sock.destroy();
    const hungUp = /the client went away from count \(request 7\)/;
    for (let i = 0; i < 50 && !hungUp.test(server.stderr()); i++) await sleep(20);
    assert.match(server.stderr(), hungUp, "a call whose client left without an event id is cancelled at once");
    assert.doesNotMatch(server.stderr(), /request 8\)/, "a resumable stream's call waits for its client");
    const resumable = /the client went away from count \(request 8\)/;
    for (let i = 0; i < 150 && !resumable.test(server.stderr()); i++) await sleep(100);
    assert.match(server.stderr(), resumable, "nobody resumed it: cancelled after the grace period");
  } finally {
    await stop(server);
  }
});

test("a flood of initializes never ends a session in use; when every session is in use a newcomer gets 503", async () => {
  const server = await startHttp(["--server", "conformance"]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  try {
    const victim = await initialize(server.url);
    const ping = (s, id) => request(server.url, { agent, headers: headers(s), body: { jsonrpc: "2.0", id, method: "ping" } });
    assert.equal((await ping(victim, 1)).status, 200);
    const flood = [];
    for (let i = 0; i < 3000; i++) flood.push(request(server.url, { agent, headers: headers(null), body: INIT, timeout: 60000 }));
    const floodAnswers = await Promise.all(flood);
    assert.ok(floodAnswers.every((r) => r.status === 200), "every initialize of the flood is answered");
    const after = await ping(victim, 2);
    assert.equal(after.status, 200, "the victim's session survived the flood");
    const evictions = server.stderr().split("\n").filter((l) => /ended a session to make room/.test(l));
    assert.ok(evictions.length >= 1 && evictions.length <= 3, `eviction log lines: ${evictions.length}`);

    // Fill every place with sessions in use: then nothing may go, and a newcomer is refused. Which
    // flood sessions are left is not known from the order of the requests (32 at a time, each
    // session created when its request is handled): every one is pinged, and the table must be
    // full, the victim and 1023 of them, each of those now in use.
    const ids = floodAnswers.map((r) => r.headers["mcp-session-id"]);
    const pings = await Promise.all(ids.map((s, i) => ping(s, 10 + i)));
    assert.ok(pings.every((r) => r.status === 200 || r.status === 404), "a flood session is there or ended");
    assert.equal(pings.filter((r) => r.status === 200).length, 1023, "1024 sessions: the victim and 1023 of the flood");
    const refused = await request(server.url, { agent, headers: headers(null), body: INIT });
    assert.equal(refused.status, 503);
    assert.match(JSON.parse(refused.body).error.message, /already serves 1024 sessions in use/);
    assert.equal((await ping(victim, 3)).status, 200);
  } finally {
    agent.destroy();
    await stop(server);
  }
});

test("resources/subscribe takes only resources that exist or a template produces, up to a cap per session", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const session = await initialize(server.url);
    let next = 1;
    const subscribe = async (uri) => answer(await request(server.url, { headers: headers(session),
      body: { jsonrpc: "2.0", id: next++, method: "resources/subscribe", params: { uri } } }));
    assert.deepEqual((await subscribe("test://watched-resource")).result, {});
    assert.deepEqual((await subscribe("test://template/abc/data")).result, {}, "a URI its template produces");
    const missing = await subscribe("test://no-such-resource");
    assert.equal(missing.error.code, -32002);
    assert.match(missing.error.message, /Resource not found: test:\/\/no-such-resource/);
    const huge = await subscribe("test://" + "x".repeat(60000));
    assert.equal(huge.error?.code, -32002, "a 60 KB URI that names nothing is refused");
    const results = [];
    for (let i = 0; i < 300; i++) results.push(await subscribe(`test://template/${i}/data`));
    const refused = results.filter((r) => r.error);
    assert.equal(results.length - refused.length, 254, "256 in all: two above and 254 here");
    assert.match(refused[0].error.message, /already has 256 subscriptions/);
    const unsub = answer(await request(server.url, { headers: headers(session),
      body: { jsonrpc: "2.0", id: next++, method: "resources/unsubscribe", params: { uri: "test://template/0/data" } } }));
    assert.deepEqual(unsub.result, {});
    assert.deepEqual((await subscribe("test://template/299/data")).result, {}, "room again after an unsubscribe");
  } finally {
    await stop(server);
  }
});

test("strict parsing: duplicate Host or Origin, userinfo in Host, transfer codings, and JSON-RPC other than 2.0", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const session = await initialize(server.url);
    const ping = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    const head = (extra, body = ping) => `POST /mcp HTTP/1.1\r\n${extra}Content-Type: application/json\r\nAccept: ${ACCEPT}\r\n` +
                                          `Mcp-Session-Id: ${session}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const host = `Host: 127.0.0.1:${server.port}\r\n`;
    const ok = await rawRequest(server.port, head(host).replace("HTTP/1.1\r\n", "HTTP/1.1\r\nConnection: close\r\n"));
    assert.equal(ok.status, 200, "the well-formed request is served");

    const twoHosts = await rawRequest(server.port, head(`${host}Host: evil.example.com\r\n`));
    assert.equal(twoHosts.status, 400);
    assert.match(twoHosts.body, /more than one Host/);
    const twoOrigins = await rawRequest(server.port, head(`${host}Origin: http://localhost\r\nOrigin: http://evil.example.com\r\n`));
    assert.equal(twoOrigins.status, 400);
    assert.match(twoOrigins.body, /more than one Origin/);
    const userinfo = await rawRequest(server.port, head("Host: localhost:1@evil.com\r\n"));
    assert.equal(userinfo.status, 400);
    assert.match(userinfo.body, /Host 'localhost:1@evil\.com' is not a host name/);
    const noHost = await rawRequest(server.port, head(""));
    assert.equal(noHost.status, 400);

    const xchunked = await rawRequest(server.port, head(`${host}Transfer-Encoding: xchunked\r\n`));
    assert.equal(xchunked.status, 400);
    assert.match(xchunked.body, /Transfer-Encoding and Content-Length together/);
    const chunkedBody = `${ping.length.toString(16)}\r\n${ping}\r\n0\r\n\r\n`;
    const te = (codings) => `POST /mcp HTTP/1.1\r\n${host}Content-Type: application/json\r\nAccept: ${ACCEPT}\r\n` +
                            `Mcp-Session-Id: ${session}\r\nConnection: close\r\nTransfer-Encoding: ${codings}\r\n\r\n${chunkedBody}`;
    assert.equal((await rawRequest(server.port, te("chunked"))).status, 200, "chunked alone is fine");
    const gzip = await rawRequest(server.port, te("gzip, chunked"));
    assert.equal(gzip.status, 501);
    assert.match(gzip.body, /transfer coding 'gzip'/);
    assert.equal((await rawRequest(server.port, te("xchunked"))).status, 400, "a last coding other than chunked");

    for (const [what, message] of [["jsonrpc 1.0", { jsonrpc: "1.0", id: 5, method: "ping" }], ["no jsonrpc", { id: 6, method: "ping" }]]) {
      const res = await request(server.url, { headers: headers(session), body: message });
      assert.equal(res.status, 400, what);
      const error = JSON.parse(res.body);
      assert.equal(error.error.code, -32600, what);
      assert.equal(error.id, message.id, what);
      assert.match(error.error.message, /"jsonrpc" must be "2\.0"/);
    }
  } finally {
    await stop(server);
  }
});
