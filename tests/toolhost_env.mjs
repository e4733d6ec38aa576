// The environment a test gives a toolhost it spawns. The MCP SDK's stdio client passes a server
// only a few variables of its own (getDefaultEnvironment), and some tests pass a bare PATH and HOME
// on purpose; TOOLHOST_ISOLATION must reach toolhost in every case, or the isolated pass of the
// suite (scripts/test: TOOLHOST_ISOLATION=process) would quietly test plugins in process.
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

// TOOLHOST_ISOLATION when this run sets it, else nothing.
export function isolationEnv() {
  const v = process.env.TOOLHOST_ISOLATION;
  return v === undefined ? {} : { TOOLHOST_ISOLATION: v };
}

// What StdioClientTransport passes by default, with TOOLHOST_ISOLATION and `extra` added.
export function toolhostEnv(extra = {}) {
  return { ...getDefaultEnvironment(), ...isolationEnv(), ...extra };
}
