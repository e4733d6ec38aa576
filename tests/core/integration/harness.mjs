// Shared by the core integration tests: spawns toolhost over stdio with the official MCP
// TypeScript SDK client and keeps every raw message the server sent.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toolhostEnv } from "../../toolhost_env.mjs";

export const TOOLHOST = process.env.TOOLHOST;
export const EXAMPLE_CONFIG = process.env.EXAMPLE_CONFIG;
export const FIXTURES_CONFIG = process.env.FIXTURES_CONFIG;
export const FAULTS_CONFIG = process.env.FAULTS_CONFIG;

// Connects to `toolhost --config CONFIG --server SERVER ARGS...`. `capabilities` are the client's;
// `received` collects every message from the server, in order; `env` adds to the environment.
export async function connect({ config = EXAMPLE_CONFIG, server = "example", capabilities = {}, onElicit, env, args = [] } = {}) {
  const client = new Client({ name: "toolhost-core-test", version: "1.0.0" }, { capabilities });
  if (onElicit) {
    const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
    client.setRequestHandler(ElicitRequestSchema, onElicit);
  }
  const transport = new StdioClientTransport({
    command: TOOLHOST,
    args: ["--config", config, "--server", server, ...args],
    env: toolhostEnv(env),
    stderr: "pipe",
  });
  const received = [];
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  await client.connect(transport);
  const deliver = transport.onmessage;
  transport.onmessage = (m) => {
    received.push(m);
    deliver?.(m);
  };
  return { client, transport, received, stderr: () => stderr };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
