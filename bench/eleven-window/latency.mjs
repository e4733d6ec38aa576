// Round trip of eleven tool calls, straight over the bridge and through toolhost, side by side.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The SDK lives in tests/node_modules, which is no ancestor of bench/.
const sdk = join(dirname(fileURLToPath(import.meta.url)), '../../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/client');
const { Client } = await import(pathToFileURL(join(sdk, 'index.js')).href);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, 'stdio.js')).href);

const [toolhost, pluginDir, windowBin, work, countText] = process.argv.slice(2);
const calls = Number(countText);
const socket = join(work, 'bridge.sock');
const config = join(work, 'toolhost.toml');
writeFileSync(config, `plugin_dirs = [${JSON.stringify(pluginDir)}]
[permissions]
"eleven.move" = "allow"
"eleven.annotate" = "allow"
[servers.eleven]
plugins = ["eleven-window"]
[servers.eleven.privacy]
hide_home_in_paths = true
`);

const win = spawn(windowBin, ['serve', join(work, 'license'), '--socket', socket, '--workbench'],
  { stdio: ['ignore', 'pipe', 'ignore'] });
process.on('exit', () => win.kill('SIGTERM'));  // also when a call fails
await new Promise((resolve, reject) => {
  let out = '';
  win.stdout.on('data', (d) => { out += d; if (out.includes('ELEVEN_BRIDGE=')) resolve(); });
  win.on('exit', () => reject(new Error('toolhost-window exited')));
});

// A bridge client as the plugin is one: one connection, one JSON line each way.
const conn = net.createConnection(socket);
await new Promise((r) => conn.on('connect', r));
let pending = null;
let buffer = '';
conn.on('data', (d) => {
  buffer += d;
  const nl = buffer.indexOf('\n');
  if (nl >= 0) { const line = buffer.slice(0, nl); buffer = buffer.slice(nl + 1); pending(JSON.parse(line)); }
});
let nextId = 1;
const bridgeCall = (tool, args) => new Promise((resolve) => {
  pending = resolve;
  conn.write(JSON.stringify({ id: nextId++, tool, args, from: { agent: 'bench', chat: 'b' } }) + '\n');
});

const client = new Client({ name: 'eleven-window-bench', version: '1.0.0' });
await client.connect(new StdioClientTransport({
  command: toolhost, args: ['--config', config, '--server', 'eleven'], stderr: 'ignore',
  env: { PATH: process.env.PATH, HOME: process.env.HOME ?? '/', ELEVEN_BRIDGE: socket, ELEVEN_AGENT: 'bench', ELEVEN_CHAT: 'b' },
}));

const time = async (fn) => {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  if (r.ok === false || r.isError) throw new Error('a call failed: ' + JSON.stringify(r));
  return Number(process.hrtime.bigint() - t0) / 1000; // microseconds
};
const cases = [
  ['current_view', {}],
  ['open_function', { function: 'main' }],
  // A saved edit: the window writes the project atomically (temp file, fsync, rename) each time.
  ['add_comment', null],
];
const results = [];
for (const [tool, fixed] of cases) {
  const args = (i) => fixed ?? { address: '0x401146', comment: `comment ${i}` };
  const samples = { bridge: [], toolhost: [] };
  for (let i = 0; i < Math.min(200, calls); i++) {
    await time(() => bridgeCall(tool, args(i)));
    await time(() => client.callTool({ name: tool, arguments: args(i) }));
  }
  const block = 100;
  for (let done = 0; done < calls; done += block) {
    for (let i = 0; i < block; i++) samples.bridge.push(await time(() => bridgeCall(tool, args(done + i))));
    for (let i = 0; i < block; i++) samples.toolhost.push(await time(() => client.callTool({ name: tool, arguments: args(done + i) })));
  }
  results.push([tool, samples]);
}
await client.close();
conn.end();
win.kill('SIGTERM');

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const f = (x) => x.toFixed(0).padStart(8);
console.log(`eleven-window: microseconds per call, ${calls} calls per side and tool, interleaved in blocks of 100`);
console.log('tool              side        p50      p90      p99   p50 ratio');
for (const [tool, s] of results) {
  const b50 = pct(s.bridge, 0.5);
  const t50 = pct(s.toolhost, 0.5);
  console.log(`${tool.padEnd(17)} bridge  ${f(b50)} ${f(pct(s.bridge, 0.9))} ${f(pct(s.bridge, 0.99))}`);
  console.log(`${''.padEnd(17)} toolhost${f(t50)} ${f(pct(s.toolhost, 0.9))} ${f(pct(s.toolhost, 0.99))}   ${(t50 / b50).toFixed(2)}x (+${(t50 - b50).toFixed(0)} us)`);
}
