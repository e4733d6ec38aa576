// gpu_profile through toolhost over MCP stdio, with the official TypeScript SDK client.
//
//   node mcp_test.mjs TOOLHOST_BIN PLUGIN_DIR FIXTURES_DIR
//
// Checks: the tool is listed with no arguments and an output schema (the SDK client validates
// every structuredContent against it); with no recording it tells how to make one; it reads the
// newest recording of the folder and its numbers equal the independent Python computation of
// independent_check.py; the permission row "Run the app to record a GPU trace" is honoured
// (Never refuses, Ask with a client that cannot be asked refuses).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [toolhost, pluginDir, fixtures] = process.argv.slice(2).map((p) => resolve(p));
const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'gpu-profile-mcp-'));
const recordings = join(work, 'recordings');
mkdirSync(recordings);
const config = join(work, 'toolhost.toml');
// One server per permission setting, all reading the same folder; gpu-window has no folder.
const server = (name, permission) => `
[servers.${name}]
plugins = ["gpu-profile"]
[servers.${name}.permissions]
"gpu-profile.record" = "${permission}"
[servers.${name}.settings.gpu-profile]
recordings_dir = "recordings"
`;
writeFileSync(config, `
plugin_dirs = [${JSON.stringify(pluginDir)}]
default_server = "gpu"
[permissions]
"gpu-profile.record" = "allow"
${server('gpu', 'allow')}${server('gpu-never', 'never')}${server('gpu-ask', 'ask')}
[servers.gpu-window]
plugins = ["gpu-profile"]
`);

async function connect(server, env = {}) {
  const transport = new StdioClientTransport({ command: toolhost, args: ['--config', config, '--server', server],
                                               env: { ...process.env, ...env }, stderr: 'ignore' });
  const client = new Client({ name: 'gpu-profile-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return client;
}
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

const timer = setTimeout(() => { console.error('timed out'); process.exit(1); }, 90_000);
try {
  const client = await connect('gpu');
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === 'gpu_profile');
  assert.ok(tool, 'gpu_profile is listed');
  assert.deepEqual(tool.inputSchema.properties ?? {}, {}, 'no arguments');
  assert.ok(tool.outputSchema, 'declares an output schema');

  // No recording yet.
  let r = await client.callTool({ name: 'gpu_profile', arguments: {} });
  assert.equal(r.isError, true);
  assert.match(text(r), /Record a GPU run/);
  assert.match(text(r), /nsys/);

  // Two recordings: the newest one is read.
  const older = join(recordings, 'nsys_cuda.sqlite');
  const newer = join(recordings, 'metal_system_trace.xml');
  copyFileSync(join(fixtures, 'nsys_cuda.sqlite'), older);
  copyFileSync(join(fixtures, 'metal_system_trace.xml'), newer);
  const now = Date.now() / 1000;
  utimesSync(older, now - 60, now - 60);
  utimesSync(newer, now - 10, now - 10);
  r = await client.callTool({ name: 'gpu_profile', arguments: {} });
  assert.notEqual(r.isError, true, text(r));
  const s = r.structuredContent;
  assert.ok(s.recording.path.endsWith('metal_system_trace.xml'), s.recording.path);
  assert.equal(s.recording.format, 'xctrace-xml');

  const expected = JSON.parse(execFileSync('python3', ['-c',
    'import json, sys; sys.path.insert(0, sys.argv[1]); import independent_check as c; print(json.dumps(c.xctrace(sys.argv[2])))',
    here, newer], { encoding: 'utf8' }));
  assert.equal(s.gpu.busy_ns, expected.busy, 'busy time = union');
  assert.equal(s.gpu.summed_ns, expected.summed);
  assert.equal(s.process.pid, expected.pid);
  assert.equal(s.frames.frame_time.p50_ns, expected.frames.p50_ns);
  assert.equal(s.frames.frame_time.p95_ns, expected.frames.p95_ns);
  assert.equal(s.frames.frame_time.p99_ns, expected.frames.p99_ns);
  assert.equal(s.frames.missed, expected.missed);
  assert.deepEqual(s.gaps.gpu.histogram.map((b) => b.count), expected.histogram);
  assert.equal(s.cpu_to_gpu.p95_ns, expected.latency.p95_ns);
  assert.ok(s.suggestions.length > 0);
  assert.match(text(r), /GPU busy .* ms of .* ms/);
  assert.match(text(r), /missed the 60 Hz refresh/);

  // A damaged newest recording gives a clear error, not numbers.
  const broken = join(recordings, 'broken.json');
  writeFileSync(broken, '{"traceEvents":[{"ph":"X","name":"a","ts":1,');
  r = await client.callTool({ name: 'gpu_profile', arguments: {} });
  assert.equal(r.isError, true);
  assert.match(text(r), /broken\.json.*truncated/);
  rmSync(broken);
  await client.close();

  for (const [server, pattern] of [['gpu-never', /Never/], ['gpu-ask', /cannot ask the user/]]) {
    const c = await connect(server);
    const refused = await c.callTool({ name: 'gpu_profile', arguments: {} });
    assert.equal(refused.isError, true, server);
    assert.match(text(refused), /Run the app to record a GPU trace/);
    assert.match(text(refused), pattern);
    await c.close();
  }
  // No recordings_dir: the folder is `recordings` next to the file open in the window, asked
  // over the bridge (one JSON line each way, as the Eleven document describes).
  const apps = join(work, 'apps');
  mkdirSync(join(apps, 'recordings'), { recursive: true });
  let openFile = join(apps, 'Example.app');
  const seen = [];
  const bridgePath = join(work, 'bridge.sock');
  const bridge = createServer((socket) => {
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk;
      for (let i; (i = buffered.indexOf('\n')) >= 0;) {
        const call = JSON.parse(buffered.slice(0, i));
        buffered = buffered.slice(i + 1);
        seen.push(call);
        const reply = openFile
          ? { id: call.id, ok: true, text: JSON.stringify({ file: openFile, function: null, address: null, view: null }) }
          : { id: call.id, ok: false, error: 'No file is open in Eleven. Ask the user to open one.' };
        socket.write(JSON.stringify(reply) + '\n');
      }
    });
  });
  await new Promise((r) => bridge.listen(bridgePath, r));
  try {
    const w = await connect('gpu-window', { ELEVEN_BRIDGE: bridgePath, ELEVEN_AGENT: 'Claude', ELEVEN_CHAT: 'c_1' });
    r = await w.callTool({ name: 'gpu_profile', arguments: {} });
    assert.equal(r.isError, true);
    assert.match(text(r), new RegExp(`looked in ${join(apps, 'recordings').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    copyFileSync(join(fixtures, 'metal_system_trace.xml'), join(apps, 'recordings', 'run.xml'));
    r = await w.callTool({ name: 'gpu_profile', arguments: {} });
    assert.notEqual(r.isError, true, text(r));
    assert.ok(r.structuredContent.recording.path.endsWith(join('apps', 'recordings', 'run.xml')));
    assert.equal(r.structuredContent.process.name, 'Example (812)', 'the open app names the process');
    assert.equal(seen.at(-1).tool, 'current_view');
    assert.equal(seen.at(-1).from.agent, 'Claude');
    openFile = null;
    r = await w.callTool({ name: 'gpu_profile', arguments: {} });
    assert.equal(r.isError, true);
    assert.match(text(r), /No file is open in Eleven/);
    await w.close();
  } finally {
    bridge.close();
  }
  console.log('gpu_profile over MCP: all checks passed');
} finally {
  clearTimeout(timer);
  rmSync(work, { recursive: true, force: true });
}
