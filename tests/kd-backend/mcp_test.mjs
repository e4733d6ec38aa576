// The kd acceptance scenario end to end: the official TypeScript SDK client talks MCP over stdio
// to toolhost serving the debugger and kd-backend plugins, which speak KDCOM to kd-sim over a
// Unix socket. Run once on a clean wire and once losing 10% and corrupting 5% of the packets,
// then a reboot of the simulated target.
//
//   node mcp_test.mjs TOOLHOST_BIN PLUGIN_DIR KD_SIM_BIN
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ntoseyeClient } from '../ntoseye_client.mjs';

const [toolhost, pluginDir, simBin] = process.argv.slice(2).map((p) => resolve(p));
const work = mkdtempSync(join(tmpdir(), 'kd-mcp-'));
const deadline = setTimeout(() => { console.error('kd mcp test: timed out'); process.exit(1); }, 150_000);

// Starts kd-sim and resolves once it printed "ready"; returns its control-channel client.
async function startSim(name, extra) {
  const sock = join(work, `${name}.sock`);
  const ctl = join(work, `${name}.ctl`);
  const proc = spawn(simBin, ['--listen', `unix:${sock}`, '--control', `unix:${ctl}`, ...extra],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((ok, fail) => {
    proc.stdout.once('data', (d) => (String(d).startsWith('ready') ? ok() : fail(new Error(String(d)))));
    proc.once('exit', (c) => fail(new Error(`kd-sim exited with ${c}`)));
  });
  const conn = createConnection(ctl);
  await new Promise((ok) => conn.once('connect', ok));
  let buffer = '';
  const waiting = [];
  conn.on('data', (d) => {
    buffer += d;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      waiting.shift()?.(line);
    }
  });
  const control = (cmd) => new Promise((ok) => { waiting.push(ok); conn.write(cmd + '\n'); });
  return { sock, control, stop: () => { conn.destroy(); proc.kill(); } };
}

const { client, connect, call, command, ok } =
  ntoseyeClient({ toolhost, pluginDir, work, backend: 'kd-backend', name: 'kd-mcp-test' });

// Runs the same session against a simulator and returns what the debugger reported at each step
// (addresses, bytes, the DbgPrint line, where steps ended), read from its answers and from the
// simulator: a lossy link must give the same observations as a clean one.
async function scenario(sim) {
  const seen = {};
  const line = (text, pattern, what) => {
    const m = text.match(pattern);
    assert.ok(m, `${what}: no ${pattern} in:\n${text}`);
    return m[0];
  };
  ok(await call('open', { backend: 'kd', connect: sim.sock }), 'open');
  const regs = ok(await command('r'), 'r');
  seen.rip = line(regs, /rip=[0-9a-f`]+/, 'r');
  seen.db = line(ok(await command('db fffff80000000000 L4'), 'db'), /4d 5a 90 00/, 'db');
  seen.physical = line(ok(await command('!db 100000 L4'), '!db'), /4d 5a 90 00/, '!db');
  ok(await command('eb fffff80000005000 be ef'), 'eb');
  seen.written = await sim.control('peek fffff80000005000 2');
  seen.written_read_back = line(ok(await command('!db 105000 L2'), '!db after eb'), /be ef/, '!db after eb');
  ok(await command('bp fffff80000001100'), 'bp');
  seen.breakpoints = await sim.control('breakpoints');
  seen.hit = line(ok(await command('g'), 'g'), /Breakpoint 0 hit[^\n]*/, 'g');
  seen.dbgprint = line(ok(await command('g'), 'g again'), /\[dbgprint\] [^\n]*/, 'g again');
  ok(await command('t'), 't');
  seen.after_t = await sim.control('reg 0 rip');
  ok(await command('p'), 'p');
  seen.after_p = await sim.control('reg 0 rip');
  ok(await command('bc *'), 'bc');
  seen.running = line((await command('g', 500)).text, /\[target running\]/, 'g without breakpoints');
  seen.state_running = await sim.control('state');
  ok(await command('break'), 'break');
  seen.state_after_break = (await sim.control('state')).split(' ')[0];
  ok(await command('bp fffff80000001100'), 'bp');
  ok(await command('bp fffff80000001010'), 'bp');
  ok(await call('close', {}), 'close');
  // close takes the breakpoints out, restores the byte under them and lets the target run.
  seen.after_close = [await sim.control('breakpoints'), await sim.control('peek fffff80000001100 1'), await sim.control('state')];
  return seen;
}

let exitCode = 0;
const sims = [];
try {
  await connect();
  const names = (await client.listTools()).tools.map((t) => t.name);
  for (const n of ['command', 'open', 'close']) assert.ok(names.includes(n), `tool ${n} is missing: ${names}`);

  const clean = await startSim('clean', []);
  sims.push(clean);
  const cleanSeen = await scenario(clean);
  // What the simulator's target does, independently of the debugger: written bytes land, the
  // breakpoint is the one set, a single step and a step over end where kd-sim's code says.
  assert.equal(cleanSeen.written, 'beef');
  assert.equal(cleanSeen.breakpoints, '1 0xfffff80000001100');
  assert.match(cleanSeen.dbgprint, /Hello from kd-sim/);
  assert.equal(cleanSeen.after_t, '0xfffff80000001103');
  assert.equal(cleanSeen.after_p, '0xfffff80000001108');
  assert.equal(cleanSeen.state_running, 'running');
  assert.equal(cleanSeen.state_after_break, 'halted');
  assert.deepEqual(cleanSeen.after_close, ['0', '48', 'running']);
  const lossy = await startSim('lossy', ['--drop', '0.10', '--corrupt', '0.05', '--seed', '11']);
  sims.push(lossy);
  assert.deepEqual(await scenario(lossy), cleanSeen);
  const stats = await lossy.control('stats');
  assert.doesNotMatch(stats, / dropped=0 /);
  assert.doesNotMatch(stats, / corrupted=0 /);

  // A target at its initial break, opened the moment it listens: the stop is at the int3 of
  // DbgBreakPointWithStatus, and g runs past it to our breakpoint.
  const initial = await startSim('initial', ['--start', 'initial-break']);
  sims.push(initial);
  const opened = ok(await call('open', { backend: 'kd', connect: initial.sock }), 'open at the initial break');
  assert.match(opened, /fffff800`00001300 cc +int3/, opened);
  const reached = ok(await command('bp fffff80000001100; g'), 'bp; g from the initial break');
  assert.match(reached, /Breakpoint 0 hit/, reached);
  assert.equal(await initial.control('reg 0 rip'), '0xfffff80000001100');
  ok(await call('close', {}), 'close after the initial break');
  assert.equal(await initial.control('state'), 'running');

  // A reboot while running is reported; the session goes on or closes cleanly.
  ok(await call('open', { backend: 'kd', connect: lossy.sock }), 'open after reboot test');
  assert.match((await command('g', 300)).text, /\[target running\]/);
  assert.equal(await lossy.control('reboot'), 'ok');
  let report = '';
  // An empty line only waits for the running target's next stop.
  for (let i = 0; i < 20 && !/reboot/i.test(report); ++i) report += (await command('', 1000)).text;
  assert.match(report, /reboot/i);
  assert.match(ok(await command('db fffff80000000000 L2', 10_000), 'db after reboot'), /4d 5a/);
  ok(await call('close', {}), 'close after reboot');
  assert.equal(await lossy.control('state'), 'running');
  console.log('kd mcp test: ok', stats);
} catch (e) {
  console.error(e);
  exitCode = 1;
} finally {
  clearTimeout(deadline);
  await client.close().catch(() => {});
  for (const s of sims) s.stop();
  rmSync(work, { recursive: true, force: true });
  process.exit(exitCode);
}
