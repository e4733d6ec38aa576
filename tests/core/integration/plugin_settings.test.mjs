// Issue 16 item 3, as a user meets it: eleven-window declares its settings' schema, so a misspelt
// key or a value out of range is refused by check-config and for --set with the place it was
// written, and a plugin that did not start is named to the agent (instructions, tool error), not
// only on stderr.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { TOOLHOST, connect } from "./harness.mjs";

const run = promisify(execFile);
const PLUGIN_DIR = process.env.PLUGIN_DIR;
const dir = mkdtempSync(join(tmpdir(), "toolhost-settings-"));
after(() => rmSync(dir, { recursive: true, force: true }));

// Writes a config serving the example and eleven-window with `settings` as eleven-window's table.
function config(name, settings) {
  const text = `plugin_dirs = [${JSON.stringify(PLUGIN_DIR)}]\n\n[servers.eleven]\nplugins = ["example", "eleven-window"]\n\n` +
    `[servers.eleven.settings.eleven-window]\n${settings}\n`;
  const path = join(dir, name);
  writeFileSync(path, text);
  return { path, text };
}

// "FILE:LINE:COLUMN" of the first line of `text` that starts with `key` (after spaces).
function placeOf({ path, text }, key) {
  const lines = text.split("\n");
  const line = lines.findIndex((l) => l.trimStart().startsWith(key));
  assert.notEqual(line, -1, `${key} is not in the config`);
  return `${path}:${line + 1}:${lines[line].indexOf(key) + 1}`;
}

async function checkConfig(path, ...extra) {
  try {
    const { stdout } = await run(TOOLHOST, ["check-config", "--config", path, ...extra]);
    return { code: 0, stdout };
  } catch (e) {
    return { code: e.code, stdout: e.stdout };
  }
}

const textOf = (result) => result.content.map((c) => c.text).join("");

test("check-config refuses a misspelt setting at its line and column, naming the settings there are", async () => {
  const typo = config("typo.toml", "timeout_msec = 2000");
  const { code, stdout } = await checkConfig(typo.path);
  assert.equal(code, 1, stdout);
  assert.ok(
    stdout.includes(`${placeOf(typo, "timeout_msec")}: servers.eleven.settings.eleven-window.timeout_msec: ` +
      "eleven-window has no such setting (its settings: timeout_ms, max_reply_bytes)"),
    stdout,
  );
});

test("check-config refuses a value out of range at its line and column", async () => {
  const low = config("low.toml", "max_reply_bytes = 65536\n  timeout_ms = 5");
  const { code, stdout } = await checkConfig(low.path);
  assert.equal(code, 1, stdout);
  assert.ok(
    stdout.includes(`${placeOf(low, "timeout_ms")}: servers.eleven.settings.eleven-window.timeout_ms: must be at least 100, not 5`),
    stdout,
  );
});

test("settings given with --set are checked the same way and named by the flag", async () => {
  const good = config("good.toml", "timeout_ms = 2000");
  const ok = await checkConfig(good.path);
  assert.equal(ok.code, 0, ok.stdout);
  assert.match(ok.stdout, /: OK \(/);

  const typo = await checkConfig(good.path, "--set", "eleven-window.timeout_msec=5");
  assert.equal(typo.code, 1, typo.stdout);
  assert.match(typo.stdout, /--set eleven-window\.timeout_msec=5: servers\.eleven\.settings\.eleven-window\.timeout_msec: eleven-window has no such setting/);
  const low = await checkConfig(good.path, "--set", "eleven-window.timeout_ms=5");
  assert.equal(low.code, 1, low.stdout);
  assert.match(low.stdout, /--set eleven-window\.timeout_ms=5: servers\.eleven\.settings\.eleven-window\.timeout_ms: must be at least 100, not 5/);
  const text = await checkConfig(good.path, "--set", "eleven-window.timeout_ms=soon");
  assert.match(text.stdout, /--set eleven-window\.timeout_ms=soon: servers\.eleven\.settings\.eleven-window\.timeout_ms: must be integer, not string/);
});

test("a plugin that did not start is named in the instructions and in the error of a call to its tool", async () => {
  const low = config("serve-low.toml", "timeout_ms = 5");
  const reason = `${placeOf(low, "timeout_ms")}: servers.eleven.settings.eleven-window.timeout_ms: must be at least 100, not 5`;
  const { client, stderr } = await connect({ config: low.path, server: "eleven" });
  after(() => client.close().catch(() => {}));
  const instructions = client.getInstructions() ?? "";
  assert.ok(instructions.includes(`Plugin 'eleven-window' did not start, so its tools are missing: ${reason}`), instructions);

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["count"]);
  const missing = await client.callTool({ name: "current_view", arguments: {} });
  assert.equal(missing.isError, true);
  assert.ok(textOf(missing).startsWith("Unknown tool: current_view. Plugin 'eleven-window' did not start, so its tools are missing: "), textOf(missing));
  assert.ok(textOf(missing).includes(reason), textOf(missing));
  // The plugin that started serves on.
  const count = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.equal(count.isError, undefined, textOf(count));
  assert.ok(stderr().includes(reason), stderr());
});

test("with settings that fit, every tool is there and nothing says a plugin failed", async () => {
  const good = config("serve-good.toml", "timeout_ms = 2000");
  const { client } = await connect({ config: good.path, server: "eleven" });
  after(() => client.close().catch(() => {}));
  assert.doesNotMatch(client.getInstructions() ?? "", /did not start/);
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === "current_view"), JSON.stringify(tools.map((t) => t.name)));
  const unknown = await client.callTool({ name: "no_such_tool", arguments: {} }).catch((e) => e);
  assert.match(String(unknown.message), /Unknown tool: no_such_tool/);
});
