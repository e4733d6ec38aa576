// Starts toolhost serving Streamable HTTP on a free loopback port and tells the test where.
import { spawn } from "node:child_process";

export const TOOLHOST = process.env.TOOLHOST;
export const CONFIG = process.env.HTTP_TEST_CONFIG;

// Resolves with { url, base, child, stderr() } once toolhost logs the endpoint it serves.
// `nofile` runs it with that many file descriptors at most (prlimit execs it: same pid).
export function startHttp(args = [], env = {}, { nofile } = {}) {
  const argv = ["--config", CONFIG, "--http", "127.0.0.1:0", ...args];
  const [command, commandArgs] = nofile ? ["prlimit", [`--nofile=${nofile}`, "--", TOOLHOST, ...argv]] : [TOOLHOST, argv];
  const child = spawn(command, commandArgs, {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...env },
  });
  let err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`toolhost did not start: ${err}`)), 20000);
    child.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/at (http:\/\/127\.0\.0\.1:(\d+))(\/\S*)/);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1] + m[3], base: m[1], port: Number(m[2]), child, stderr: () => err });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`toolhost exited with ${code}: ${err}`));
    });
  });
}

export async function stop(server) {
  if (server.child.exitCode !== null) return;
  const done = new Promise((r) => server.child.once("exit", r));
  server.child.kill("SIGTERM");
  await done;
}
