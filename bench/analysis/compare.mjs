// bench/analysis: whole-program analysis of one large binary through `toolhost --server
// analysis` (open_binary answers when the analysis is done) against `objdump -d` on the same
// file, alternating, then the latency of listing calls on the analysed binary.
//   node compare.mjs TOOLHOST PLUGIN_DIR FILE ROUNDS CALLS
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const sdk = join(dirname(fileURLToPath(import.meta.url)), '../../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/client');
const { Client } = await import(pathToFileURL(join(sdk, 'index.js')).href);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, 'stdio.js')).href);

const [toolhost, pluginDir, file, roundsText, callsText] = process.argv.slice(2);
const rounds = Number(roundsText);
const calls = Number(callsText);
const work = fs.mkdtempSync(join(os.tmpdir(), 'analysis-bench-'));
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }));
const config = join(work, 'toolhost.toml');
fs.writeFileSync(config, `plugin_dirs = [${JSON.stringify(pluginDir)}]\n[servers.analysis]\nplugins = ["analysis"]\n`);
const ticks = 100;  // USER_HZ: /proc/<pid>/stat counts CPU time in these
const cpuOf = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / ticks;  // utime + stime
};
const seconds = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;

// objdump -d to /dev/null; wall and CPU seconds (from /usr/bin/time).
async function objdump() {
  const t0 = process.hrtime.bigint();
  const child = spawn('/usr/bin/time', ['-f', '%U %S', 'objdump', '-d', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((r) => child.on('exit', r));
  if (code !== 0) throw new Error('objdump failed: ' + err);
  const [user, sys] = err.trim().split('\n').pop().split(' ').map(Number);
  return { wall: seconds(t0), cpu: user + sys };
}

// A fresh toolhost: spawn to open_binary's answer, and the CPU the analysis took.
async function analyse(keep = false) {
  const transport = new StdioClientTransport({
    command: toolhost, args: ['--config', config, '--server', 'analysis'], stderr: 'ignore',
    env: { PATH: process.env.PATH, HOME: work },
  });
  const client = new Client({ name: 'analysis-bench', version: '1.0.0' });
  await client.connect(transport);
  const cpu0 = cpuOf(transport.pid);
  const t0 = process.hrtime.bigint();
  const r = await client.callTool({ name: 'open_binary', arguments: { path: file } }, undefined, { timeout: 900000 });
  if (r.isError) throw new Error('open_binary failed: ' + JSON.stringify(r.content));
  const out = { wall: seconds(t0), cpu: cpuOf(transport.pid) - cpu0, rss: 0 };
  const status = fs.readFileSync(`/proc/${transport.pid}/status`, 'utf8');
  out.rss = Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]) / 1024;
  if (keep) return { ...out, client };
  await client.close();
  return out;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

console.log(`file: ${file} (${(fs.statSync(file).size / 1048576).toFixed(1)} MiB)`);
const ours = [], theirs = [];
let kept = null;
for (let i = 0; i < rounds; i++) {
  // Alternate which goes first: drift on a shared machine weighs on both.
  if (i % 2 === 0) { theirs.push(await objdump()); ours.push(await analyse()); }
  else { const a = await analyse(i === rounds - 1); ours.push(a); theirs.push(await objdump()); if (a.client) kept = a.client; }
}
if (kept === null) kept = (await analyse(true)).client;

const line = (name, xs) => `${name.padEnd(34)} wall ${median(xs.map((x) => x.wall)).toFixed(2).padStart(7)} s   cpu ${median(xs.map((x) => x.cpu)).toFixed(2).padStart(7)} s`;
console.log(`\nwhole program, median of ${rounds} (each run cold: a new process, nothing cached)`);
console.log(line('objdump -d > /dev/null', theirs));
console.log(line('toolhost open_binary (analysis)', ours));
console.log(`${'ratio (objdump / toolhost)'.padEnd(34)} wall ${(median(theirs.map((x) => x.wall)) / median(ours.map((x) => x.wall))).toFixed(1).padStart(7)} x   cpu ${(median(theirs.map((x) => x.cpu)) / median(ours.map((x) => x.cpu))).toFixed(1).padStart(7)} x`);
console.log(`toolhost peak RSS ${median(ours.map((x) => x.rss)).toFixed(0)} MiB`);

// Listing calls on the analysed binary, at random offsets.
const overview = (await kept.callTool({ name: 'binary_overview', arguments: {} })).structuredContent.result;
const totals = { list_procedures: overview.procedure_count, list_strings: overview.string_count };
const names = (await kept.callTool({ name: 'list_names', arguments: { limit: 1 } })).structuredContent.result.total;
totals.list_names = names;
let seed = 12345;
const random = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % Math.max(1, n); };
const shapes = {
  list_procedures: () => ({ offset: random(totals.list_procedures) }),
  list_names: () => ({ offset: random(totals.list_names) }),
  list_strings: () => ({ offset: random(totals.list_strings) }),
  list_segments: () => ({}),
  list_documents: () => ({}),
  binary_overview: () => ({}),
};
console.log(`\nlisting calls through MCP stdio (default page of 100), ${calls} each: round trip in ms`);
console.log(`${'tool'.padEnd(18)}${'p50'.padStart(8)}${'p99'.padStart(8)}${'max'.padStart(8)}`);
for (const [tool, args] of Object.entries(shapes)) {
  const ms = [];
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    const r = await kept.callTool({ name: tool, arguments: args() });
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.isError) throw new Error(`${tool} failed: ${JSON.stringify(r.content)}`);
  }
  console.log(`${tool.padEnd(18)}${pct(ms, 0.5).toFixed(3).padStart(8)}${pct(ms, 0.99).toFixed(3).padStart(8)}${Math.max(...ms).toFixed(3).padStart(8)}`);
}
await kept.close();
