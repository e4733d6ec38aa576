// Long calls as tasks, driven the way a user's client drives them: the official TypeScript SDK
// client (@modelcontextprotocol/sdk 1.x, its experimental tasks API, MCP 2025-11-25) against
// toolhost serving the conformance fixtures, over stdio and over Streamable HTTP. A task reports
// progress to the call's token, runs to its result, is cancelled (and stops working), asks the
// user a question while it runs, tells the client of each status change (notifications/tasks/status),
// and belongs to the client that made it. A 2026-07-28 request
// (stateless) cannot read a 2025 session's task either.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema, TaskStatusNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp, stop } from "../http/http_server.mjs";
import { toolhostEnv } from "../toolhost_env.mjs";

const TOOLHOST = process.env.TOOLHOST;
const CONFIG = process.env.HTTP_TEST_CONFIG;

async function connect(transport) {
  const client = new Client({ name: "tasks-sdk-test", version: "1.0.0" },
                            { capabilities: { elicitation: { form: {} } }, defaultTaskPollInterval: 100 });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return { action: "accept", content: { confirm: true } };
  });
  // notifications/tasks/status, by task id: each status the server said a task changed to.
  const statuses = new Map();
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
    statuses.set(n.params.taskId, [...(statuses.get(n.params.taskId) ?? []), n.params.status]);
  });
  await client.connect(transport);
  await client.listTools();  // the SDK learns which tools run as tasks from execution.taskSupport
  return { client, asked, statuses };
}

// The statuses notifications/tasks/status reported for `taskId`, once `last` came (or 2 s passed).
async function statusesOf(statuses, taskId, last) {
  for (let i = 0; i < 40 && !(statuses.get(taskId) ?? []).includes(last); i++) await new Promise((r) => setTimeout(r, 50));
  return statuses.get(taskId) ?? [];
}

// Runs `name` as a task to its end; every message the SDK's stream yields, and the progress seen.
async function runAsTask(client, name, args, onTask) {
  const messages = [];
  const progress = [];
  const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema,
                                                          { onprogress: (p) => progress.push(p.progress) });
  for await (const m of stream) {
    messages.push(m);
    if (m.type === "taskCreated" && onTask) await onTask(m.task.taskId);
  }
  return { messages, progress };
}

async function scenario(open) {
  const { client, asked, statuses } = await open();
  try {
    // The list says which tools may (or must) run as tasks.
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    assert.equal(support.slow_compute, "optional");
    assert.equal(support.failing_job, "required");
    assert.equal(support.greet, undefined);

    // A long call as a task: handle first, progress to the call's token, then its result.
    const done = await runAsTask(client, "slow_compute", { seconds: 1.2, label: "sdk" });
    const types = done.messages.map((m) => m.type);
    assert.equal(types[0], "taskCreated", types.join(","));
    assert.equal(types.at(-1), "result", JSON.stringify(done.messages.at(-1)));
    assert.match(done.messages.at(-1).result.content[0].text, /Computed sdk in 1200 ms/);
    assert.ok(done.progress.length >= 3, `progress seen: ${done.progress}`);
    for (let i = 1; i < done.progress.length; i++) assert.ok(done.progress[i] > done.progress[i - 1]);
    const finished = await client.experimental.tasks.getTask(done.messages[0].task.taskId);
    assert.equal(finished.status, "completed");
    // The server told the client of the end as well, once, and of nothing after it.
    assert.deepEqual(await statusesOf(statuses, finished.taskId, "completed"), ["completed"]);

    // Cancelled while it runs: the task says so and the tool stops (no more progress).
    let cancelledId;
    const cancelled = await runAsTask(client, "slow_compute", { seconds: 60, label: "cancel" }, async (taskId) => {
      cancelledId = taskId;
      await new Promise((r) => setTimeout(r, 400));
      const answer = await client.experimental.tasks.cancelTask(taskId);
      assert.equal(answer.status, "cancelled");
    });
    assert.equal(cancelled.messages.at(-1).type, "error");
    assert.match(String(cancelled.messages.at(-1).error.message), /cancelled/);
    const seen = cancelled.progress.length;
    assert.ok(seen >= 1, "the task reported progress before it was cancelled");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(cancelled.progress.length, seen, "progress went on after tasks/cancel");
    const task = await client.experimental.tasks.getTask(cancelledId);
    assert.equal(task.status, "cancelled");
    assert.ok(task.lastUpdatedAt >= task.createdAt);

    // A question while it runs: the SDK answers it through tasks/result, and the call goes on.
    const asking = await runAsTask(client, "confirm_delete", { filename: "notes.txt" });
    assert.equal(asking.messages.at(-1).type, "result", JSON.stringify(asking.messages.at(-1)));
    assert.equal(asking.messages.at(-1).result.content[0].text, "Deleted notes.txt.");
    assert.equal(asked.length, 1);
    assert.equal(asked[0].message, "Delete notes.txt?");
    // Waiting for the answer, then working again, then done: each change was announced.
    assert.deepEqual(await statusesOf(statuses, asking.messages[0].task.taskId, "completed"),
                     ["input_required", "working", "completed"]);

    // A tool error is a completed task whose result is the error.
    const failing = await runAsTask(client, "failing_job", {});
    assert.equal(failing.messages.at(-1).type, "result");
    assert.equal(failing.messages.at(-1).result.isError, true);

    // tasks/list shows this client's tasks.
    const list = await client.experimental.tasks.listTasks();
    assert.ok(list.tasks.some((t) => t.taskId === cancelledId));
    return { client, taskId: cancelledId };
  } catch (e) {
    await client.close();
    throw e;
  }
}

test("stdio: a long call as a task, with progress, cancellation and a question", async () => {
  const transport = new StdioClientTransport({ command: TOOLHOST, args: ["--config", CONFIG, "--server", "conformance"],
                                               env: toolhostEnv(), stderr: "pipe" });
  const { client } = await scenario(() => connect(transport));
  await client.close();
});

test("HTTP: the same, and another client cannot read the task", async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const { client, taskId } = await scenario(() => connect(new StreamableHTTPClientTransport(new URL(server.url))));
    // Another session of the same endpoint: the task is not its own.
    const other = await connect(new StreamableHTTPClientTransport(new URL(server.url)));
    await assert.rejects(other.client.experimental.tasks.getTask(taskId), (e) => e.code === -32602);
    const theirs = await other.client.experimental.tasks.listTasks();
    assert.ok(!theirs.tasks.some((t) => t.taskId === taskId));
    await other.client.close();
    // Nor a 2026-07-28 request, whatever it declares.
    const res = await fetch(server.url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
                 "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get", "Mcp-Name": taskId },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { taskId, _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } } } } }),
    });
    const body = await res.text();
    assert.match(body, /"code":-32602/, body);
    // Its own session still reads it.
    assert.equal((await client.experimental.tasks.getTask(taskId)).status, "cancelled");
    await client.close();
  } finally {
    await stop(server);
  }
});
