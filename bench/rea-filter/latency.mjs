// Measures one echo call's round trip, directly against server-everything and through
// toolhost + rea-filter, and prints the percentiles side by side with the difference.
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// The SDK lives in tests/node_modules, which is no ancestor of bench/.
const sdk = join(dirname(fileURLToPath(import.meta.url)), "../../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/client");
const { Client } = await import(pathToFileURL(join(sdk, "index.js")).href);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, "stdio.js")).href);

const [toolhost, pluginDir, node, everything, countText] = process.argv.slice(2);
const calls = Number(countText);
const work = mkdtempSync(join(tmpdir(), "rea-filter-bench-"));
const config = join(work, "toolhost.toml");
writeFileSync(config, `plugin_dirs = [${JSON.stringify(pluginDir)}]
[permissions]
"rea.read" = "allow"
"run" = "allow"
[servers.everything]
plugins = ["rea-filter"]
[servers.everything.settings.rea-filter]
command = [${JSON.stringify(node)}, ${JSON.stringify(everything)}, "stdio"]
`);

async function connect(command, args) {
  const client = new Client({ name: "rea-filter-bench", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
  return client;
}

const direct = await connect(node, [everything, "stdio"]);
const proxied = await connect(toolhost, ["--config", config, "--server", "everything"]);
const samples = { direct: [], proxied: [] };
const once = async (client) => {
  const t0 = process.hrtime.bigint();
  await client.callTool({ name: "echo", arguments: { message: "ping" } });
  return Number(process.hrtime.bigint() - t0) / 1000;  // microseconds
};
// Warm both up (JIT, caches, the upstream started by the proxy), then interleave blocks so
// that drift on a shared machine hits both sides alike.
for (let i = 0; i < 300; i++) { await once(direct); await once(proxied); }
const block = 100;
for (let done = 0; done < calls; done += block) {
  for (let i = 0; i < block; i++) samples.direct.push(await once(direct));
  for (let i = 0; i < block; i++) samples.proxied.push(await once(proxied));
}
await direct.close();
await proxied.close();
rmSync(work, { recursive: true, force: true });

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]; };
const row = (label, f) => console.log(label.padEnd(10) + [50, 90, 99].map((p) => f(p).toFixed(0).padStart(10)).join(""));
console.log(`rea-filter: echo round trip in microseconds, ${calls} calls per side (TypeScript SDK client, stdio)`);
console.log("".padEnd(10) + ["p50", "p90", "p99"].map((h) => h.padStart(10)).join(""));
row("direct", (p) => pct(samples.direct, p));
row("proxied", (p) => pct(samples.proxied, p));
row("added", (p) => pct(samples.proxied, p) - pct(samples.direct, p));
const added = pct(samples.proxied, 50) - pct(samples.direct, 50);
console.log(`added latency p50: ${added.toFixed(0)} us (goal < 100 us), ratio proxied/direct p50: ${(pct(samples.proxied, 50) / pct(samples.direct, 50)).toFixed(2)}`);
