// Runs the conformance suite's CLI (or any command) to its end and gives its exit code and all it
// printed; one that runs past `timeoutMs` is killed, so a stuck scenario fails instead of hanging.
import { spawn } from "node:child_process";

export function run(cmd, args, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}
