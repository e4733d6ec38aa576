// The client side the debugger's backend tests share: a toolhost serving `ntoseye` (the debugger
// and one backend plugin) over stdio to the official TypeScript SDK client, and the small calls
// every such test makes.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toolhostEnv } from "./toolhost_env.mjs";

// Writes `work`/toolhost.toml serving the debugger with `backend` from `pluginDir`, and returns an
// unconnected client for it with call (a tool), command (a debugger line) and ok (assert success).
export function ntoseyeClient({ toolhost, pluginDir, work, backend, name }) {
  const config = join(work, "toolhost.toml");
  writeFileSync(config, `
plugin_dirs = [${JSON.stringify(pluginDir)}]
default_server = "ntoseye"
[servers.ntoseye]
plugins = ["debugger", "${backend}"]
`);
  const client = new Client({ name, version: "1.0.0" }, { capabilities: {} });
  const transport = new StdioClientTransport({ command: toolhost, args: ["--config", config, "--server", "ntoseye"],
                                               env: toolhostEnv(), stderr: "inherit" });
  const textOf = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  async function call(tool, args) {
    const r = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 60_000 });
    return { error: r.isError === true, text: textOf(r) };
  }
  const command = (line, timeout_ms = 10_000) => call("command", { line, timeout_ms });
  function ok(r, what) {
    assert.equal(r.error, false, `${what} failed:\n${r.text}`);
    return r.text;
  }
  return { client, connect: () => client.connect(transport), call, command, ok };
}
