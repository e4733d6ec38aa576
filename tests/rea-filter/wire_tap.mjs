// Runs an MCP server over stdio and records every message between it and its client, so that a
// test can see which revision the client spoke:
//
//   node wire_tap.mjs LOG COMMAND [ARGS...]
//
// With TAP_DROP=METHOD in the environment, requests of that method are recorded but never reach
// the server (one that does not answer them).
// Each line of LOG is {"to": message, "pid"} (client to server) or {"from": message, "pid"},
// the pid telling apart the runs of one command. Bytes pass unchanged; stderr is the server's own.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";

const [log, command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });

function tap(direction) {
  let buffer = "";
  return (chunk) => {
    buffer += chunk;
    for (let i; (i = buffer.indexOf("\n")) >= 0; buffer = buffer.slice(i + 1)) {
      const line = buffer.slice(0, i).trim();
      if (!line) continue;
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        message = { unparsed: line };
      }
      appendFileSync(log, JSON.stringify({ [direction]: message, pid: process.pid }) + "\n");
    }
  };
}

const drop = process.env.TAP_DROP;
const toServer = tap("to");
const fromServer = tap("from");
// Whole lines to the server, so that one can be held back.
let pending = "";
process.stdin.on("data", (d) => {
  toServer(d.toString());
  pending += d;
  for (let i; (i = pending.indexOf("\n")) >= 0; pending = pending.slice(i + 1)) {
    const line = pending.slice(0, i + 1);
    if (drop && line.includes(`"method":${JSON.stringify(drop)}`)) continue;
    child.stdin.write(line);
  }
});
process.stdin.on("end", () => child.stdin.end());
child.stdout.on("data", (d) => {
  fromServer(d.toString());
  process.stdout.write(d);
});
child.on("exit", (code, signal) => process.exit(signal ? 128 : code ?? 0));
for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => child.kill(s));
