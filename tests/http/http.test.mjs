// Streamable HTTP as a client sees it: where toolhost agrees to listen, Host/Origin and token
// checks, session lifecycle, per-session JSON-RPC ids, stream resumption, limits, and that a slow
// client does not hold up anyone else.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { spawn } from "node:child_process";
import { TOOLHOST, CONFIG, startHttp, stop } from "./http_server.mjs";

const ACCEPT = "application/json, text/event-stream";

// One HTTP request on its own connection; resolves with status, headers and the whole body.
function request(url, { method = "POST", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (data += d));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on("error", reject);
    if (body !== undefined) req.write(typeof body === "string" ? body : JSON.stringify(body));
    req.end();
  });
}

// SSE or JSON answer -> the JSON-RPC messages it carried, with their event ids.
function messages(res) {
  if ((res.headers["content-type"] ?? "").startsWith("application/json")) return [{ id: null, msg: JSON.parse(res.body) }];
  const out = [];
  for (const block of res.body.split("\n\n")) {
    const id = block.match(/^id: (.*)$/m)?.[1] ?? null;
    const data = block.match(/^data: (.*)$/m)?.[1];
    if (data) out.push({ id, msg: JSON.parse(data) });
  }
  return out;
}

function mcpHeaders(session, extra = {}) {
  return { "Content-Type": "application/json", Accept: ACCEPT, ...(session ? { "Mcp-Session-Id": session } : {}), ...extra };
}

async function initialize(url, extra = {}) {
  const res = await request(url, {
    headers: mcpHeaders(null, extra),
    body: { jsonrpc: "2.0", id: 0, method: "initialize",
            params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "http-test", version: "1" } } },
  });
  assert.equal(res.status, 200, res.body);
  const session = res.headers["mcp-session-id"];
  assert.match(session, /^[0-9a-f]{32}$/);
  const ack = await request(url, { headers: mcpHeaders(session, extra), body: { jsonrpc: "2.0", method: "notifications/initialized" } });
  assert.equal(ack.status, 202);
  return session;
}

async function call(url, session, id, name, args = {}, extra = {}) {
  const res = await request(url, {
    headers: mcpHeaders(session, extra),
    body: { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } },
  });
  assert.equal(res.status, 200, res.body);
  return messages(res);
}

function runToExit(args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(TOOLHOST, args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, err });
    });
  });
}

test("a non-loopback address is refused without --unsafe-http, with a message saying why", async () => {
  const { code, err } = await runToExit(["--config", CONFIG, "--server", "conformance", "--http", "0.0.0.0:0"]);
  assert.equal(code, 2);
  assert.match(err, /refusing to serve HTTP on 0\.0\.0\.0:0: it is not a loopback address/);
  assert.match(err, /--unsafe-http/);
});

test("--unsafe-http allows a non-loopback address and warns on stderr", async () => {
  const child = spawn(TOOLHOST, ["--config", CONFIG, "--server", "conformance", "--http", "0.0.0.0:0", "--unsafe-http"],
                      { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(err)), 20000);
    child.stderr.on("data", (d) => {
      err += d;
      if (/serving 'conformance'/.test(err)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  assert.match(err, /warning.*non-loopback address.*no token is set/i);
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
});

test("bad --http values are explained", async () => {
  const a = await runToExit(["--config", CONFIG, "--http", "localhost"]);
  assert.equal(a.code, 2);
  assert.match(a.err, /--http wants HOST:PORT/);
  const b = await runToExit(["--config", CONFIG, "--http", "127.0.0.1:99999"]);
  assert.equal(b.code, 2);
  assert.match(b.err, /not a port number/);
});

test("Host and Origin: a foreign one gets 403, loopback and configured ones are served", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const init = { jsonrpc: "2.0", id: 1, method: "initialize",
                   params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } };
    const foreignOrigin = await request(server.url, { headers: mcpHeaders(null, { Origin: "http://evil.example.com" }), body: init });
    assert.equal(foreignOrigin.status, 403);
    assert.equal(foreignOrigin.headers["mcp-session-id"], undefined, "no session for a refused request");
    assert.match(JSON.parse(foreignOrigin.body).error.message, /Origin 'http:\/\/evil\.example\.com' is not allowed/);
    const foreignHost = await request(server.url, { headers: mcpHeaders(null, { Host: "evil.example.com" }), body: init });
    assert.equal(foreignHost.status, 403);
    const sneaky = await request(server.url, { headers: mcpHeaders(null, { Origin: "http://localhost.evil.example.com" }), body: init });
    assert.equal(sneaky.status, 403, "an origin that only starts like localhost is foreign");
    const local = await request(server.url, { headers: mcpHeaders(null, { Origin: `http://localhost:${server.port}` }), body: init });
    assert.equal(local.status, 200);
    const configured = await request(server.url, { headers: mcpHeaders(null, { Origin: "https://app.example.org" }), body: init });
    assert.equal(configured.status, 200);
  } finally {
    await stop(server);
  }
});

test("with a token, a missing or wrong token gets 401 and the right one is served", async () => {
  for (const how of ["flag", "env"]) {
    const server = how === "flag" ? await startHttp(["--server", "conformance", "--token", "s3cret-token"])
                                  : await startHttp(["--server", "conformance"], { TOOLHOST_TOKEN: "s3cret-token" });
    try {
      const body = { jsonrpc: "2.0", id: 1, method: "initialize",
                     params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } };
      const none = await request(server.url, { headers: mcpHeaders(null), body });
      assert.equal(none.status, 401, how);
      assert.match(none.headers["www-authenticate"], /^Bearer/);
      const wrong = await request(server.url, { headers: mcpHeaders(null, { Authorization: "Bearer s3cret-tokeN" }), body });
      assert.equal(wrong.status, 401, how);
      const prefix = await request(server.url, { headers: mcpHeaders(null, { Authorization: "Bearer s3cret" }), body });
      assert.equal(prefix.status, 401, how);
      const right = await request(server.url, { headers: mcpHeaders(null, { Authorization: "Bearer s3cret-token" }), body });
      assert.equal(right.status, 200, how);
      const session = right.headers["mcp-session-id"];
      const later = await request(server.url, { headers: mcpHeaders(session), body: { jsonrpc: "2.0", id: 2, method: "ping" } });
      assert.equal(later.status, 401, "every request needs the token, not only the first");
    } finally {
      await stop(server);
    }
  }
});

test("sessions: missing id 400 (a GET without one 405), unknown id 404, bad protocol version 400, DELETE ends a session", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const ping = { jsonrpc: "2.0", id: 5, method: "ping" };
    const missing = await request(server.url, { headers: mcpHeaders(null), body: ping });
    assert.equal(missing.status, 400);
    assert.match(missing.body, /Mcp-Session-Id/);
    // A GET is answered with a stream or 405 (what clients take as "no stream here"); without a
    // session, in either era, there is none.
    for (const version of ["2025-11-25", "2026-07-28"]) {
      const get = await request(server.url, { method: "GET", headers: { Accept: "text/event-stream", "MCP-Protocol-Version": version } });
      assert.equal(get.status, 405, version);
      assert.equal(get.headers.allow, "POST");
      assert.match(JSON.parse(get.body).error.message, /needs its Mcp-Session-Id/);
    }
    const deleteNothing = await request(server.url, { method: "DELETE", headers: {} });
    assert.equal(deleteNothing.status, 400);
    const unknown = await request(server.url, { headers: mcpHeaders("0123456789abcdef0123456789abcdef"), body: ping });
    assert.equal(unknown.status, 404);

    const session = await initialize(server.url);
    const ok = await request(server.url, { headers: mcpHeaders(session, { "MCP-Protocol-Version": "2025-11-25" }), body: ping });
    assert.equal(ok.status, 200);
    assert.deepEqual(JSON.parse(ok.body), { jsonrpc: "2.0", id: 5, result: {} });
    const badVersion = await request(server.url, { headers: mcpHeaders(session, { "MCP-Protocol-Version": "1999-01-01" }), body: ping });
    assert.equal(badVersion.status, 400);
    assert.match(badVersion.body, /unsupported MCP-Protocol-Version '1999-01-01'/);

    const gone = await request(server.url, { method: "DELETE", headers: { "Mcp-Session-Id": session } });
    assert.equal(gone.status, 200);
    const after = await request(server.url, { headers: mcpHeaders(session), body: ping });
    assert.equal(after.status, 404, "a deleted session is unknown");
    const again = await request(server.url, { method: "DELETE", headers: { "Mcp-Session-Id": session } });
    assert.equal(again.status, 404);
    const wrongPath = await request(server.base + "/nope", { headers: mcpHeaders(null), body: ping });
    assert.equal(wrongPath.status, 404);
    const put = await request(server.url, { method: "PUT", headers: mcpHeaders(session), body: ping });
    assert.equal(put.status, 405);
    const jsonOnly = await request(server.url, { headers: mcpHeaders(session, { Accept: "application/json" }), body: ping });
    assert.equal(jsonOnly.status, 406, "a POST's answer may be SSE, so the client must accept it");
  } finally {
    await stop(server);
  }
});

test("two sessions using the same JSON-RPC ids at the same time each receive only their own answers", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const [a, b] = await Promise.all([initialize(server.url), initialize(server.url)]);
    assert.notEqual(a, b);
    const rounds = [];
    for (let i = 0; i < 40; i++) {
      for (const [who, session] of [["A", a], ["B", b]]) {
        rounds.push(call(server.url, session, i, "json_schema_2020_12_tool", { name: `${who}-${i}` }).then((msgs) => ({ who, i, msgs })));
      }
    }
    for (const { who, i, msgs } of await Promise.all(rounds)) {
      const answers = msgs.filter((m) => m.msg.id !== undefined);
      assert.equal(answers.length, 1);
      assert.equal(answers[0].msg.id, i);
      assert.equal(answers[0].msg.result.content[0].text, `Received: {"name":"${who}-${i}"}`);
    }
  } finally {
    await stop(server);
  }
});

test("progress travels on the POST's SSE stream with event ids, and Last-Event-ID replays what a dropped client missed", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const session = await initialize(server.url);
    // Read the first event of a call with progress, then drop the connection.
    const firstId = await new Promise((resolve, reject) => {
      const req = http.request(server.url, { method: "POST", headers: mcpHeaders(session), agent: false }, (res) => {
        assert.equal(res.headers["content-type"], "text/event-stream");
        assert.equal(res.headers["x-accel-buffering"], "no");
        let data = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          data += d;
          const m = data.match(/^id: (\S+)$/m);
          if (m) {
            req.destroy();
            resolve(m[1]);
          }
        });
      });
      req.on("error", () => {});
      req.end(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call",
                               params: { name: "test_tool_with_progress", arguments: {}, _meta: { progressToken: "tok" } } }));
      setTimeout(() => reject(new Error("no event")), 10000);
    });
    assert.match(firstId, /^\d+-1$/);
    const resumed = await request(server.url, { method: "GET", headers: { Accept: "text/event-stream", "Mcp-Session-Id": session, "Last-Event-ID": firstId } });
    assert.equal(resumed.status, 200);
    const events = messages(resumed);
    const stream = firstId.split("-")[0];
    assert.deepEqual(events.map((e) => e.id), [`${stream}-2`, `${stream}-3`, `${stream}-4`]);
    assert.deepEqual(events.slice(0, 2).map((e) => e.msg.params.progress), [50, 100]);
    assert.equal(events[2].msg.id, 9);
    assert.equal(events[2].msg.result.content[0].text, "Progress test completed.");
    const stale = await request(server.url, { method: "GET", headers: { Accept: "text/event-stream", "Mcp-Session-Id": session, "Last-Event-ID": "999-1" } });
    assert.equal(stale.status, 400);
  } finally {
    await stop(server);
  }
});

test("a body larger than [http] max_body_bytes gets 413", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const session = await initialize(server.url);
    const res = await request(server.url, { headers: mcpHeaders(session),
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "json_schema_2020_12_tool", arguments: { name: "x".repeat(70000) } } } });
    assert.equal(res.status, 413);
    assert.match(res.body, /at most 65536 bytes/);
  } finally {
    await stop(server);
  }
});

test("a client that sends its body slowly does not delay another session's calls", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const [slowSession, fast] = await Promise.all([initialize(server.url), initialize(server.url)]);
    // Several slow clients, more than toolhost has I/O threads, each trickling one byte at a time.
    const slowClients = [];
    let slowDone = 0;
    for (let c = 0; c < 6; c++) {
      const body = JSON.stringify({ jsonrpc: "2.0", id: 100 + c, method: "tools/call", params: { name: "test_simple_text", arguments: {} } });
      slowClients.push(new Promise((resolve) => {
        const sock = net.connect(server.port, "127.0.0.1", () => {
          sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\n` +
                     `Accept: ${ACCEPT}\r\nMcp-Session-Id: ${slowSession}\r\nContent-Length: ${body.length}\r\n\r\n`);
          let i = 0;
          const timer = setInterval(() => {
            if (i < body.length) sock.write(body[i++]);
            else clearInterval(timer);
          }, 4000 / body.length);
        });
        let answer = "";
        sock.on("data", (d) => {
          answer += d;
          if (answer.includes("This is a simple text response")) {
            slowDone++;
            sock.destroy();
            resolve(answer);
          }
        });
        sock.on("error", () => resolve(answer));
        sock.on("close", () => resolve(answer));
      }));
    }
    await new Promise((r) => setTimeout(r, 100));  // the slow bodies are now in flight
    for (let i = 0; i < 20; i++) {
      const msgs = await call(server.url, fast, i, "test_simple_text");
      assert.equal(msgs[0].msg.result.content[0].text, "This is a simple text response for testing.");
    }
    assert.equal(slowDone, 0, "all calls of the other session finished while the slow bodies were still arriving");
    const answers = await Promise.all(slowClients);
    for (const a of answers) assert.match(a, /^HTTP\/1\.1 200 OK/, "the slow clients are served too, once their bodies are complete");
  } finally {
    await stop(server);
  }
});

test("without --server every enabled server has its own endpoint /NAME/mcp", async () => {
  const server = await startHttp([]);
  try {
    assert.match(server.stderr() + "", /serving 'conformance' at http:\/\/127\.0\.0\.1:\d+\/conformance\/mcp/);
    await new Promise((r) => setTimeout(r, 200));
    assert.match(server.stderr(), /serving 'second' at http:\/\/127\.0\.0\.1:\d+\/second\/mcp/);
    assert.doesNotMatch(server.stderr(), /serving 'off'/);
    const a = await initialize(`${server.base}/conformance/mcp`);
    const b = await initialize(`${server.base}/second/mcp`);
    const onA = await request(`${server.base}/second/mcp`, { headers: mcpHeaders(a), body: { jsonrpc: "2.0", id: 1, method: "ping" } });
    assert.equal(onA.status, 404, "a session belongs to the endpoint that created it");
    const msgs = await call(`${server.base}/second/mcp`, b, 1, "test_simple_text");
    assert.equal(msgs[0].msg.result.content[0].text, "This is a simple text response for testing.");
  } finally {
    await stop(server);
  }
});

test("unrelated notifications go to the GET stream, once, with event ids", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const session = await initialize(server.url);
    const sub = await request(server.url, { headers: mcpHeaders(session),
      body: { jsonrpc: "2.0", id: 1, method: "resources/subscribe", params: { uri: "test://watched-resource" } } });
    assert.deepEqual(JSON.parse(sub.body), { jsonrpc: "2.0", id: 1, result: {} }, "the POST carries only its answer");
    // The fixture plugin adds test_dynamic_tool 2 s after it starts (tools/list_changed) and
    // changes test://watched-resource every 3 s (resources/updated, to subscribers).
    const events = await new Promise((resolve, reject) => {
      const req = http.request(server.url, { method: "GET", agent: false,
                                             headers: { Accept: "text/event-stream", "Mcp-Session-Id": session } }, (res) => {
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers["content-type"], "text/event-stream");
        let data = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          data += d;
          const got = [...data.matchAll(/id: (\S+)\ndata: (.*)\n\n/g)].map((m) => ({ id: m[1], msg: JSON.parse(m[2]) }));
          if (got.some((e) => e.msg.method === "notifications/resources/updated")) {
            req.destroy();
            resolve(got);
          }
        });
      });
      req.on("error", () => {});
      req.end();
      setTimeout(() => reject(new Error("no resources/updated on the GET stream within 8 s")), 8000);
    });
    const ids = events.map((e) => e.id);
    for (const id of ids) assert.match(id, /^0-\d+$/);
    assert.deepEqual(ids, [...new Set(ids)], "each event once");
    // tools/list_changed comes too when this session existed 2 s after the plugin started, as it
    // normally does; nothing else may come.
    for (const e of events) {
      assert.ok(["notifications/resources/updated", "notifications/tools/list_changed"].includes(e.msg.method), e.msg.method);
    }
    assert.deepEqual(events.find((e) => e.msg.params)?.msg.params, { uri: "test://watched-resource" });
    const list = await request(server.url, { headers: mcpHeaders(session), body: { jsonrpc: "2.0", id: 2, method: "tools/list" } });
    assert.ok(JSON.parse(list.body).result.tools.some((t) => t.name === "test_dynamic_tool"));
    const notAccepting = await request(server.url, { method: "GET", headers: { Accept: "application/json", "Mcp-Session-Id": session } });
    assert.equal(notAccepting.status, 406);
  } finally {
    await stop(server);
  }
});

test("a request id reused while the first is in flight is refused on its own stream; the first still gets its answer", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const session = await initialize(server.url);
    const first = request(server.url, { headers: mcpHeaders(session),
      body: { jsonrpc: "2.0", id: 42, method: "tools/call", params: { name: "test_tool_with_logging", arguments: {} } } });
    await new Promise((r) => setTimeout(r, 30));
    const second = await request(server.url, { headers: mcpHeaders(session),
      body: { jsonrpc: "2.0", id: 42, method: "tools/call", params: { name: "test_simple_text", arguments: {} } } });
    assert.equal(second.status, 200);
    assert.match(JSON.parse(second.body).error.message, /request id 42 is already in use/);
    const answers = messages(await first).filter((m) => m.msg.id === 42);
    assert.equal(answers.length, 1);
    assert.match(answers[0].msg.result.content[0].text, /Logging test completed/);
  } finally {
    await stop(server);
  }
});

test("thousands of sequential calls on one kept-alive connection are all answered on it", async () => {
  const server = await startHttp(["--server", "conformance"]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const session = await initialize(server.url);
    const sockets = new Set();
    for (let i = 0; i < 3000; i++) {
      const res = await new Promise((resolve, reject) => {
        const req = http.request(server.url, { method: "POST", agent, headers: mcpHeaders(session) }, (r) => {
          sockets.add(r.socket);
          let data = "";
          r.on("data", (d) => (data += d));
          r.on("end", () => resolve({ status: r.statusCode, body: data }));
        });
        req.on("error", (e) => reject(new Error(`call ${i}: ${e.message}`)));
        req.end(JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "test_simple_text", arguments: {} } }));
      });
      assert.equal(res.status, 200, `call ${i}`);
    }
    assert.equal(sockets.size, 1, "the server never dropped the connection");
  } finally {
    agent.destroy();
    await stop(server);
  }
});
