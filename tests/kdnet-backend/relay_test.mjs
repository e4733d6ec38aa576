// kd-sim's running machine behind `kdnet-sim --kd-target`: the debugger over KDNET (10% of the
// datagrams lost, 5% corrupted) drives a KD target that executes, through the relay that also
// carries the Windows-shaped guest and a live QEMU guest: the break-in, a breakpoint hit, DbgPrint
// while running, break, a reboot of the target (kdnet keys a new session), close removing the
// breakpoints. Observations come from kd-sim's control channel and kdnet-sim's counters.
//
//   node relay_test.mjs TOOLHOST_BIN PLUGIN_DIR KD_SIM_BIN KDNET_SIM_BIN
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ntoseyeClient } from '../ntoseye_client.mjs';
import { createInterface } from 'node:readline';

const [toolhost, pluginDir, kdSimBin, kdnetSimBin] = process.argv.slice(2).map((p) => resolve(p));
const KEY = '1.z.10.3w5e11264sgsf';
const work = mkdtempSync(join(tmpdir(), 'kdnet-relay-'));
const timer = setTimeout(() => { console.error('kdnet relay test: timed out'); process.exit(1); }, 150_000);

// kd-sim, fault-free: the faults are on the KDNET datagrams.
const sock = join(work, 'kd.sock');
const ctl = join(work, 'kd.ctl');
const kd = spawn(kdSimBin, ['--listen', `unix:${sock}`, '--control', `unix:${ctl}`], { stdio: ['ignore', 'pipe', 'inherit'] });
await new Promise((ok, fail) => {
  kd.stdout.once('data', (d) => (String(d).startsWith('ready') ? ok() : fail(new Error(String(d)))));
  kd.once('exit', (c) => fail(new Error(`kd-sim exited with ${c}`)));
});
const conn = createConnection(ctl);
await new Promise((ok) => conn.once('connect', ok));
const controlLines = createInterface({ input: conn });
const waiting = [];
controlLines.on('line', (l) => waiting.shift()?.(l));
const control = (cmd) => new Promise((ok) => { waiting.push(ok); conn.write(cmd + '\n'); });

const port = await new Promise((ok) => {
  const s = createSocket('udp4');
  s.bind(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
});
const net = spawn(kdnetSimBin, ['--port', String(port), '--key', KEY, '--drop', '0.1', '--corrupt', '0.05', '--seed', '7',
                                '--poke-ms', '500', '--kd-target', `unix:${sock}`], { stdio: ['pipe', 'pipe', 'inherit'] });
const netLines = createInterface({ input: net.stdout });
const netReplies = [];
netLines.on('line', (l) => netReplies.push(l));
async function netStats() {
  const before = netReplies.length;
  net.stdin.write('stats\n');
  for (let i = 0; i < 200 && netReplies.length === before; i++) await new Promise((ok) => setTimeout(ok, 10));
  return JSON.parse(netReplies[netReplies.length - 1]);
}

const { client, connect, call, command, ok } =
  ntoseyeClient({ toolhost, pluginDir, work, backend: 'kdnet-backend', name: 'kdnet-relay-test' });

try {
  await connect();
  ok(await call('open', { backend: 'kdnet', connect: `127.0.0.1:${port}`, key: KEY }), 'open');
  // The break-in stops at the int3 of DbgBreakPointWithStatus, as Windows reports it.
  assert.match(ok(await command('r'), 'r'), /rip=fffff80000001300/);
  assert.match(ok(await command('db fffff80000000000 L4'), 'db'), /4d 5a 90 00/);

  ok(await command('bp fffff80000001100'), 'bp');
  assert.equal(await control('breakpoints'), '1 0xfffff80000001100');
  const hit = ok(await command('g'), 'g');
  assert.match(hit, /Breakpoint 0 hit/, hit);
  assert.match(hit, /\[target halted[^\]]*fffff800`00001100/, hit);
  assert.match(ok(await command('g'), 'g again'), /\[dbgprint\] Hello from kd-sim/);

  ok(await command('bc *'), 'bc');
  assert.match((await command('g', 500)).text, /\[target running\]/);
  assert.match((await control('state')).split(' ')[0], /running/);
  assert.match(ok(await command('break'), 'break'), /\[target halted/);
  assert.match((await control('state')).split(' ')[0], /halted/);

  // The target reboots while running: kd-sim restarts its stream, kdnet-sim pokes without a port
  // and keys a new session, and the debugger reports the reboot and goes on.
  assert.match((await command('g', 500)).text, /\[target running\]/);
  assert.equal(await control('reboot'), 'ok');
  let report = '';
  for (let i = 0; i < 20 && !/reboot/i.test(report); ++i) report += (await command('', 1000)).text;
  assert.match(report, /reboot/i, report);
  assert.match(ok(await command('db fffff80000000000 L2', 10_000), 'db after reboot'), /4d 5a/);
  ok(await command('bp fffff80000001100'), 'bp after reboot');

  ok(await call('close', {}), 'close');
  assert.equal(await control('breakpoints'), '0', 'close removed every breakpoint from the target');
  const stats = await netStats();
  assert.ok(stats.transport_restarts >= 1 && stats.handshakes >= 2, JSON.stringify(stats));
  assert.ok(stats.dropped > 0 && stats.corrupted > 0 && stats.rejected > 0, JSON.stringify(stats));
  assert.equal(stats.repeated_sequences, 0, 'no KDNET sequence number was reused');
  console.log('kdnet relay over MCP: ok', JSON.stringify(stats));
} finally {
  clearTimeout(timer);
  await client.close().catch(() => {});
  net.stdin.end('quit\n');
  conn.destroy();
  kd.kill();
  rmSync(work, { recursive: true, force: true });
}
