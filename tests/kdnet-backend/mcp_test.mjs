// The kd scenario through toolhost and the debugger plugin over KDNET, driven by the official
// TypeScript SDK client over MCP stdio, against the kdnet-sim process losing 10% and corrupting
// 5% of the datagrams, with a reboot of the simulated target.
//
//   node mcp_test.mjs TOOLHOST_BIN PLUGIN_DIR KDNET_SIM_BIN
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ntoseyeClient } from '../ntoseye_client.mjs';

const [toolhost, pluginDir, simBin] = process.argv.slice(2).map((p) => resolve(p));
const KEY = '1.z.10.3w5e11264sgsf';
const work = mkdtempSync(join(tmpdir(), 'kdnet-mcp-'));
const timer = setTimeout(() => { console.error('timed out'); process.exit(1); }, 110_000);

// A UDP port that was free a moment ago, for toolhost to listen on.
const port = await new Promise((ok) => {
  const s = createSocket('udp4');
  s.bind(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
});

const sim = spawn(simBin, ['--port', String(port), '--key', KEY, '--drop', '0.1', '--corrupt', '0.05',
                           '--seed', '42', '--poke-ms', '500'], { stdio: ['pipe', 'pipe', 'inherit'] });
const simLines = createInterface({ input: sim.stdout });
const simReplies = [];
let simWaiter = null;
simLines.on('line', (l) => { simReplies.push(l); if (simWaiter) { simWaiter(); simWaiter = null; } });
async function simStats() {
  const before = simReplies.length;
  sim.stdin.write('stats\n');
  while (simReplies.length === before) await new Promise((ok) => { simWaiter = ok; });
  return JSON.parse(simReplies[simReplies.length - 1]);
}

const { client, connect, call, command } =
  ntoseyeClient({ toolhost, pluginDir, work, backend: 'kdnet-backend', name: 'kdnet-test' });

try {
  await connect();
  const names = (await client.listTools()).tools.map((t) => t.name);
  for (const n of ['command', 'open', 'close', 'output']) assert.ok(names.includes(n), `tool ${n} is listed`);

  // A malformed key is refused with the expected form, before any network wait.
  const bad = await call('open', { backend: 'kdnet', connect: `127.0.0.1:${port}`, key: '1.2.3' });
  assert.ok(bad.error, bad.text);
  assert.match(bad.text, /expected four base-36 numbers separated by dots/);

  const open = await call('open', { backend: 'kdnet', connect: `127.0.0.1:${port}`, key: KEY });
  assert.ok(!open.error, open.text);
  assert.match(open.text, /Connected to kdnet/);

  const regs = await command('r');
  assert.ok(!regs.error, regs.text);
  assert.match(regs.text, /rip=fffff800`?00001300/i);  // the break-in's int3 in DbgBreakPointWithStatus

  const mem = await command('db fffff80000003000 l8');
  assert.match(mem.text, /07 0a 0d 10 13 16 19 1c/i);
  assert.ok(!(await command('eb fffff80000003008 de ad be ef')).error);
  assert.match((await command('db fffff80000003008 l4')).text, /de ad be ef/i);

  assert.ok(!(await command('bp fffff80000001001')).error);
  const hit = await command('g');
  assert.match(hit.text, /Breakpoint \d+ hit/, hit.text);
  assert.match(hit.text, /\[target halted[^\]]*fffff800`?00001001/i, hit.text);
  const t = await command('t');
  assert.match(t.text, /\[target halted[^\]]*fffff800`?00001004/i, t.text);
  const p = await command('p');
  assert.match(p.text, /\[target halted[^\]]*fffff800`?00001005/i, p.text);

  // Without the breakpoint it runs and prints; break stops it.
  assert.ok(!(await command('bc *')).error);
  assert.ok(!(await command('bp fffff80000001100')).error);  // never reached; close must remove it
  let printed = '';
  const run = await command('g', 1500);
  assert.match(run.text, /\[target running\]/, run.text);
  printed += run.text;
  const brk = await command('break');
  printed += brk.text;
  assert.match(brk.text, /\[target halted/, brk.text);
  assert.match(printed, /\[dbgprint\] kdnet-sim: tick/, printed);
  assert.equal((await simStats()).breakpoints, 1);

  // What the simulator corrupted was refused and counted: .kdstats shows it.
  const kdstats = await command('.kdstats');
  assert.ok(!kdstats.error, kdstats.text);
  const badPackets = Number((kdstats.text.match(/bad_packets\D+(\d+)/) || [])[1]);
  assert.ok(badPackets > 0, kdstats.text);
  const retransmits = Number((kdstats.text.match(/retransmits\D+(\d+)/) || [])[1]);
  assert.ok(retransmits > 0, kdstats.text);

  // A reboot while running is detected, reported, and the session goes on with the new boot.
  const again = await command('g', 500);
  assert.match(again.text, /\[target running\]/, again.text);
  sim.stdin.write('reboot\n');
  const reboot = await command('', 15_000);
  assert.match(reboot.text, /reboot/i, reboot.text);
  assert.match((await command('db fffff80000000000 l2')).text, /4d 5a/i);
  assert.ok(!(await command('bp fffff80000001001')).error);

  const closed = await call('close', {});
  assert.ok(!closed.error, closed.text);
  const stats = await simStats();
  assert.equal(stats.breakpoints, 0, 'close removed every breakpoint from the target');
  assert.equal(stats.repeated_sequences, 0, 'no KDNET sequence number was reused');
  assert.ok(stats.dropped > 0 && stats.corrupted > 0, JSON.stringify(stats));
  assert.equal(stats.boots, 1);
  console.log('kdnet over MCP: ok', JSON.stringify(stats));
} finally {
  clearTimeout(timer);
  await client.close().catch(() => {});
  sim.stdin.end('quit\n');
  rmSync(work, { recursive: true, force: true });
}
