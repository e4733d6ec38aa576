// The MCP Inspector's CLI mode lists and calls the example tool over stdio.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { TOOLHOST, EXAMPLE_CONFIG } from "./harness.mjs";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const inspector = path.join(path.dirname(require.resolve("@modelcontextprotocol/inspector/package.json")), "cli/build/cli.js");
// Everything after "--" is the server command, so the Inspector keeps its own --config away from ours.
const server = ["--", TOOLHOST, "--config", EXAMPLE_CONFIG, "--server", "example"];

test("the Inspector CLI lists the example tool", async () => {
  const { stdout } = await run(process.execPath, [inspector, "--cli", "--method", "tools/list", ...server], { timeout: 60000 });
  const listed = JSON.parse(stdout);
  assert.deepEqual(listed.tools.map((t) => t.name), ["count"]);
});

test("the Inspector CLI calls the example tool", async () => {
  const { stdout } = await run(
    process.execPath,
    [inspector, "--cli", "--tool-arg", "to=3", "--method", "tools/call", "--tool-name", "count", ...server],
    { timeout: 60000 },
  );
  const result = JSON.parse(stdout);
  assert.deepEqual(result.structuredContent, { counted: 3, completed: true });
  assert.equal(result.content[0].text, "Counted to 3.");
});
