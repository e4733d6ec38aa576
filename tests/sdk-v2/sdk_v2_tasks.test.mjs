// A long call as a task, run the way a user of the official client runs one: the Tasks
// extension's client (@modelcontextprotocol/ext-tasks, pinned in tests/package.json) over
// @modelcontextprotocol/client 2.x pinned to 2026-07-28, over stdio and over Streamable HTTP,
// against the conformance plugin's `slow_compute` (progress every 100 ms; may run as a task).
// The task is seen working with its progress as the status message (the extension carries no
// notifications/progress for tasks), its end arrives as notifications/tasks on a
// subscriptions/listen stream and its result is fetched; a second task is cancelled, reads as
// cancelled, and its call stops; another HTTP client cannot read the task.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";
import { CLIENT_INFO, VERSION, answerTo, open, sent, until } from "./sdk_v2_peer.mjs";

const TASKS = "io.modelcontextprotocol/tasks";
const CAPABILITIES = { elicitation: { form: {} }, extensions: { [TASKS]: {} } };

// The host's request coordinator the extension's client asks for in the 2026-07-28 era (the
// SDK's own result codecs refuse a tools/call answered with resultType "task"): its requests go
// out on the client's transport under ids of their own, and their answers come back here rather
// than to the SDK's Client.
function coordinator(c) {
  const waiting = new Map();
  let next = 0;
  c.intercept = (m) => {
    const resolve = "result" in m || "error" in m ? waiting.get(m.id) : undefined;
    if (!resolve) return false;
    waiting.delete(m.id);
    resolve(m);
    return true;
  };
  return async (request, { signal } = {}) => {
    const id = `ext-tasks-${++next}`;
    const answered = new Promise((resolve, reject) => {
      waiting.set(id, resolve);
      signal?.addEventListener("abort", () => {
        waiting.delete(id);
        reject(signal.reason);
      }, { once: true });
    });
    await c.transport.send({ jsonrpc: "2.0", id, ...request });
    const m = await answered;
    return "error" in m ? { kind: "error", error: m.error } : { kind: "result", result: m.result };
  };
}

// A client pinned to 2026-07-28 declaring the tasks extension, and its task session.
async function openTasks(kind) {
  const c = await open(kind, { capabilities: CAPABILITIES });
  const tasks = createTaskSessionFromClient(c.client, {
    endpointId: `toolhost-sdk2-${kind}`,
    rawDispatch: coordinator(c),
    v2RequestFraming: { protocolVersion: VERSION, clientInfo: CLIENT_INFO, clientCapabilities: CAPABILITIES },
  });
  const close = async () => {
    await tasks.close();
    await c.close();
  };
  return { ...c, tasks, close };
}

const polls = (wire, taskId) => sent(wire, "tasks/get").filter((m) => m.params.taskId === taskId);

for (const kind of ["stdio", "http"]) {
  test(`${kind}: a long call runs as a task: seen working with progress, then its result; a second one is cancelled and stops`, async (t) => {
    const c = await openTasks(kind);
    t.after(c.close);
    assert.equal(c.tasks.capabilities.execution, true, "the client did not see the tasks extension in server/discover");
    assert.equal(c.tasks.capabilities.cancellation, true);

    const began = Date.now();
    const execution = await c.tasks.callTool("slow_compute", { seconds: 3, label: "v2" });
    assert.equal(execution.kind, "task", "slow_compute was answered at once, not with a task");
    const taskId = execution.handle.taskId;
    // On the wire: the call was answered with the task's handle, and the request said it takes tasks.
    const call = sent(c.wire, "tools/call").at(-1);
    assert.deepEqual(call.params._meta["io.modelcontextprotocol/clientCapabilities"].extensions[TASKS], {});
    const handle = answerTo(c.wire, call.id).result;
    assert.equal(handle.resultType, "task");
    assert.equal(handle.taskId, taskId);
    assert.equal(handle.status, "working");

    // Its status changes come on a subscriptions/listen stream too.
    const listening = await c.client.listen({ taskIds: [taskId] });
    const ack = c.wire.find((w) => !w.out && w.m.method === "notifications/subscriptions/acknowledged" &&
                                   w.m.params._meta["io.modelcontextprotocol/subscriptionId"] ===
                                   sent(c.wire, "subscriptions/listen").at(-1).id);
    assert.deepEqual(ack.m.params.notifications.taskIds, [taskId]);

    const seen = [];
    const { outcome } = await execution.settle({ onEvent: (e) => e.type === "task" && seen.push(e.task) });
    const took = Date.now() - began;
    const result = resultFromTaskOutcome(outcome);
    assert.equal(result.content[0].text, "Computed v2 in 3000 ms");
    assert.equal(outcome.task?.status, "completed");

    // While it worked: status working, its progress the status message ("done/total: computing"), growing.
    const working = seen.filter((v) => v.status === "working");
    const progress = working.map((v) => /^(\d+)\/3000: computing$/.exec(v.statusMessage ?? "")?.[1])
      .filter((p) => p !== undefined).map(Number);
    assert.ok(progress.length >= 2, `progress seen: ${working.map((v) => v.statusMessage)}`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i] > progress[i - 1], `progress went back: ${progress}`);
    // The client polled with tasks/get (Mcp-Name carries the task over HTTP) ...
    const asked = polls(c.wire, taskId);
    assert.ok(asked.length >= 2, `tasks/get polls: ${asked.length}`);
    if (kind === "http") assert.ok(c.posts.some((h) => h.get("mcp-method") === "tasks/get" && h.get("mcp-name") === taskId));
    // ... and the server said when it ended: the whole task, result inlined, on the listen stream.
    await until("notifications/tasks for the end of the task", () =>
      c.wire.some((w) => !w.out && w.m.method === "notifications/tasks" && w.m.params.status === "completed"));
    const ended = c.wire.find((w) => !w.out && w.m.method === "notifications/tasks" && w.m.params.status === "completed").m;
    assert.equal(ended.params.taskId, taskId);
    assert.deepEqual(ended.params.result.content, result.content);
    assert.equal(ended.params._meta["io.modelcontextprotocol/subscriptionId"], sent(c.wire, "subscriptions/listen").at(-1).id);
    t.diagnostic(`${kind}: 3 s task: result after ${took} ms, ${asked.length} tasks/get polls, ` +
                 `${progress.length} progress steps seen`);
    // Fetched again once done: the same result.
    const done = await c.tasks.task(taskId).result();
    assert.equal(resultFromTaskOutcome(done).content[0].text, "Computed v2 in 3000 ms");
    await listening.close();

    // A second task, cancelled while it works: it reads as cancelled, and its call stops long
    // before its 60 seconds (the host logs the plugin's return).
    const second = await c.tasks.callTool("slow_compute", { seconds: 60, label: "cancelled" });
    assert.equal(second.kind, "task");
    for await (const e of second.updates()) {
      if (e.type === "task" && /computing/.test(e.task.statusMessage ?? "")) break;
    }
    await second.cancel();
    const cancelled = await second.settle();
    assert.equal(cancelled.outcome.status, "cancelled");
    const view = await c.tasks.task(second.handle.taskId).snapshot();
    assert.equal(view.status, "cancelled");
    const id = second.handle.taskId;
    await until("the host hearing of the cancellation", () => c.log().includes(`client cancelled task ${id} (slow_compute)`));
    await until("the plugin's call returning", () =>
      c.log().includes(`task ${id} (slow_compute): its call stopped after the cancellation`));
  });
}

test("stdio: task notifications need the extension declared, and name at most 64 tasks", async (t) => {
  const plain = await open("stdio");
  t.after(plain.close);
  await assert.rejects(plain.client.listen({ taskIds: ["0123456789abcdef0123456789abcdef"] }),
                       (e) => e.code === -32021 && /notifications for taskIds belong to the 'io.modelcontextprotocol\/tasks' extension/.test(e.message));
  const c = await openTasks("stdio");
  t.after(c.close);
  const many = Array.from({ length: 65 }, (_, i) => `task-${i}`);
  await assert.rejects(c.client.listen({ taskIds: many }), (e) => e.code === -32602 && /at most 64 task ids/.test(e.message));
  // Ids it cannot read are not listened to: the acknowledgement lists none.
  const listening = await c.client.listen({ taskIds: ["0123456789abcdef0123456789abcdef"] });
  const ack = c.wire.find((w) => !w.out && w.m.method === "notifications/subscriptions/acknowledged");
  assert.deepEqual(ack.m.params.notifications, {});
  await listening.close();
});

test("http: another client's task reads as unknown", async (t) => {
  const c = await openTasks("http");
  t.after(c.close);
  const began = Date.now();
  const execution = await c.tasks.callTool("slow_compute", { seconds: 2, label: "mine" });
  assert.equal(execution.kind, "task");
  const taskId = execution.handle.taskId;
  // Another HTTP client of the same endpoint, in a session of its own (2025-11-25, where a task
  // belongs to the session that made it), through the same extension's client.
  const other = await open("http", { url: c.url, mode: "legacy" });
  const theirs = createTaskSessionFromClient(other.client, { endpointId: "toolhost-sdk2-other" });
  try {
    assert.equal(other.client.getNegotiatedProtocolVersion(), "2025-11-25");
    await assert.rejects(theirs.task(taskId).snapshot(), (e) => e.code === -32602 && /Failed to retrieve task/.test(e.message));
  } finally {
    await theirs.close();
    await other.close();
  }
  // An id nobody was given reads as unknown too; the task's own client still reads it to its end.
  await assert.rejects(c.tasks.task("0123456789abcdef0123456789abcdef").snapshot(), (e) => e.code === -32602);
  const { outcome } = await execution.settle();
  assert.equal(resultFromTaskOutcome(outcome).content[0].text, "Computed mine in 2000 ms");
  t.diagnostic(`http: 2 s task, polled only: result after ${Date.now() - began} ms, ` +
               `${polls(c.wire, taskId).length} tasks/get polls`);
});
