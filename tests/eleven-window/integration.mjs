// Integration tests of issue 4: the official TypeScript SDK client drives
// `toolhost --server eleven`, whose eleven-window plugin talks to toolhost-window opened on the
// fixture program (with symbols and stripped). Expected addresses come from `nm` at run time.
//
// Environment (set by CTest): TOOLHOST_BIN, TOOLHOST_WINDOW, ELEVEN_FIXTURE_DIR.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { isolationEnv } from '../toolhost_env.mjs';

const TOOLHOST = process.env.TOOLHOST_BIN;
const WINDOW = process.env.TOOLHOST_WINDOW;
const FIXTURES = process.env.ELEVEN_FIXTURE_DIR;
const CONFIG = path.join(import.meta.dirname, 'eleven-test.toml');
const TIMEOUT_MS = 2000; // [servers.eleven.settings.eleven-window] timeout_ms in eleven-test.toml
const NO_FILE = 'No file is open in Eleven. Ask the user to open one.';
const TOOLS = ['current_view', 'open_function', 'set_view', 'list_marks', 'rename_function', 'add_note',
  'add_comment', 'bookmark', 'set_code_type', 'set_number_format', 'propose_patch'];

for (const [name, value] of Object.entries({ TOOLHOST, WINDOW, FIXTURES })) {
  if (!value) throw new Error(`${name} is not set; run this test through ctest`);
}

const cleanups = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

// Function symbols as nm reports them for the unstripped build: name -> address (BigInt).
function nmFunctions(file) {
  const out = new Map();
  for (const line of execFileSync('nm', [file], { encoding: 'utf8' }).split('\n')) {
    const m = /^([0-9a-f]+) [tT] (\S+)$/.exec(line.trim());
    if (m) out.set(m[2], BigInt('0x' + m[1]));
  }
  return out;
}
const NM = nmFunctions(path.join(FIXTURES, 'license'));
const hex = (a) => '0x' + a.toString(16);
const ghidra = (a) => 'FUN_' + a.toString(16).padStart(8, '0');
const sha256 = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

// A fresh folder that serves as $HOME, with copies of the fixture binaries.
function scratchHome() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'eleven-it-'));
  for (const f of ['license', 'license-stripped']) {
    fs.copyFileSync(path.join(FIXTURES, f), path.join(dir, f));
    fs.chmodSync(path.join(dir, f), 0o755);
  }
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Starts toolhost-window and resolves once it prints ELEVEN_BRIDGE (its sockets listen).
// The window's environment: `home` is its home, so its data folder (projects) is inside it.
function windowEnv(home) {
  const env = { ...process.env, HOME: home };
  delete env.XDG_DATA_HOME;
  delete env.XDG_STATE_HOME;
  return env;
}

async function startWindow(home, args, socket = path.join(home, 'bridge.sock')) {
  const proc = spawn(WINDOW, ['serve', ...args, '--socket', socket], { cwd: home, env: windowEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  cleanups.push(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('toolhost-window did not start: ' + stderr)), 10000);
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes('ELEVEN_BRIDGE=')) { clearTimeout(timer); resolve(); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`toolhost-window exited (${code}): ${stderr}`)); });
  });
  return { proc, socket };
}

async function stopWindow(win) {
  if (win.proc.exitCode !== null || win.proc.signalCode !== null) return;
  const gone = new Promise((resolve) => win.proc.on('exit', resolve));
  win.proc.kill('SIGTERM');
  await gone;
}

// The person at the window: toolhost-window's own command line.
function windowCommand(socket, ...args) {
  const r = spawnSync(WINDOW, [...args, '--socket', socket], { encoding: 'utf8', timeout: 10000, env: windowEnv(os.tmpdir()) });
  return { ok: r.status === 0, text: (r.status === 0 ? r.stdout : r.stderr).trim() };
}

async function connect(home, { server = 'eleven', bridge, agent = 'Claude', chat = 'c_123' } = {}) {
  const env = { PATH: process.env.PATH, HOME: home, ELEVEN_AGENT: agent, ELEVEN_CHAT: chat, ...isolationEnv() };
  if (bridge !== undefined) env.ELEVEN_BRIDGE = bridge;
  const transport = new StdioClientTransport({
    command: TOOLHOST, args: ['--config', CONFIG, '--server', server], env, stderr: 'pipe',
  });
  const client = new Client({ name: 'eleven-window-test', version: '1.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return client;
}

async function call(client, name, args = {}) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 30000 });
  const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  return { error: r.isError === true, text, structured: r.structuredContent };
}

async function expectOk(client, name, args, expected) {
  const r = await call(client, name, args);
  assert.equal(r.error, false, `${name} failed: ${r.text}`);
  if (expected !== undefined) assert.equal(r.text, expected);
  return r;
}

async function expectError(client, name, args, pattern) {
  const r = await call(client, name, args);
  assert.equal(r.error, true, `${name} should have failed but answered: ${r.text}`);
  if (pattern instanceof RegExp) assert.match(r.text, pattern);
  else if (pattern !== undefined) assert.equal(r.text, pattern);
  return r;
}

// Valid arguments for every tool, for the checks that every tool says the same thing.
function validArgs(address) {
  return {
    current_view: {}, list_marks: {},
    open_function: { function: address }, set_view: { view: 'assembly' },
    rename_function: { function: address, new_name: 'check_license' },
    add_note: { function: address, note: 'A note.' }, add_comment: { address, comment: 'A comment.' },
    bookmark: { address, label: 'here' }, set_code_type: { address, type: 'code' },
    set_number_format: { address, format: 'decimal' },
    propose_patch: { address, bytes: '90', reason: 'Does nothing.' },
  };
}

test('the eleven server lists the document\'s tools', async () => {
  const home = scratchHome();
  const client = await connect(home, { bridge: path.join(home, 'none.sock') });
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  const rename = tools.find((t) => t.name === 'rename_function');
  assert.deepEqual(rename.inputSchema.required, ['function', 'new_name']);
  const view = tools.find((t) => t.name === 'set_view');
  assert.deepEqual(view.inputSchema.properties.view.enum, ['pseudocode', 'assembly', 'graph', 'hex']);
});

test('without a bridge, or with no window listening, every tool says so in one sentence', async () => {
  const home = scratchHome();
  const unset = await connect(home);
  const missing = await connect(home, { bridge: path.join(home, 'nobody-here.sock') });
  for (const [tool, args] of Object.entries(validArgs('0x401000'))) {
    await expectError(unset, tool, args, /^No Eleven window is configured: ELEVEN_BRIDGE is not set/);
    await expectError(missing, tool, args, /^No Eleven window is listening at ~\/nobody-here\.sock/);
  }
});

// One request straight to the window's bridge, as the plugin sends it; the parsed answer line.
function bridgeRequest(socket, request) {
  return new Promise((resolve, reject) => {
    const conn = net.createConnection(socket);
    let text = '';
    conn.on('data', (d) => {
      text += d;
      if (text.includes('\n')) {
        conn.end();
        resolve(JSON.parse(text.slice(0, text.indexOf('\n'))));
      }
    });
    conn.on('error', reject);
    conn.write(JSON.stringify(request) + '\n');
  });
}

test('with no file open every tool answers the document\'s sentence, until the user opens one', async () => {
  const home = scratchHome();
  const win = await startWindow(home, []);
  const client = await connect(home, { bridge: win.socket });
  for (const [tool, args] of Object.entries(validArgs(hex(NM.get('main'))))) {
    await expectError(client, tool, args, NO_FILE);
  }
  // The window reads the tool's name before it looks for a file, so the sentence above came from
  // each tool's own dispatch: a name the window does not have gets another answer.
  for (const tool of ['no_such_tool', 'current_views', 'gpu_profile']) {
    const answer = await bridgeRequest(win.socket, { id: 1, tool, args: {} });
    assert.deepEqual(answer, { id: 1, ok: false, error: `Eleven has no tool named "${tool}".` });
  }
  const opened = windowCommand(win.socket, 'open', path.join(home, 'license'));
  assert.ok(opened.ok, opened.text);
  const view = await expectOk(client, 'current_view', {});
  assert.deepEqual(JSON.parse(view.text), { file: '~/license', function: null, address: null, view: null });
  await stopWindow(win);
});

test('every tool\'s success path and refusals on the binary with symbols', async () => {
  const home = scratchHome();
  const win = await startWindow(home, [path.join(home, 'license')]);
  const client = await connect(home, { bridge: win.socket });
  const check = hex(NM.get('check_license'));
  const main = hex(NM.get('main'));

  // Seeing what the user sees. The home folder is hidden in answers (hide_home_in_paths).
  const nothing = await expectOk(client, 'current_view', {});
  assert.deepEqual(JSON.parse(nothing.text), { file: '~/license', function: null, address: null, view: null });
  await expectOk(client, 'open_function', { function: 'check_license' }, `Showing check_license (${check}) to the user.`);
  await expectOk(client, 'open_function', { function: main }, `Showing main (${main}) to the user.`);
  const inside = hex(NM.get('check_license') + 4n);
  await expectOk(client, 'open_function', { function: inside }, `Showing check_license (${check}) to the user.`);
  const view = await expectOk(client, 'current_view', {});
  assert.deepEqual(JSON.parse(view.text), { file: '~/license', function: 'check_license', address: check, view: 'pseudocode' });
  assert.deepEqual(view.structured, { file: '~/license', function: 'check_license', address: check, view: 'pseudocode' });

  // Refusals: malformed addresses, unknown functions, names that are not C identifiers.
  await expectError(client, 'open_function', { function: '0x40zz' }, /"0x40zz" is not an address: addresses are hexadecimal with a 0x prefix/);
  await expectError(client, 'open_function', { function: 'no_such_function' }, /There is no function named "no_such_function" in license/);
  await expectError(client, 'add_comment', { address: '4198710', comment: 'x' }, /is not an address/);
  await expectError(client, 'rename_function', { function: 'check_license', new_name: 'check-license' }, /"check-license" is not a C identifier/);
  await expectError(client, 'rename_function', { function: 'check_license', new_name: 'int' }, /C keyword/);
  await expectError(client, 'rename_function', { function: 'check_license', new_name: 'main' }, /Another function is already named main/);
  await expectError(client, 'set_view', { view: 'tree' }, /view/);
  await expectError(client, 'propose_patch', { address: check, bytes: '9g', reason: 'x' }, /is not hex bytes/);

  // set_view: refused on the home canvas, works once the user is in the workbench.
  const refused = await expectError(client, 'set_view', { view: 'assembly' }, /home canvas/);
  assert.match(refused.text, /pseudocode/);
  assert.ok(windowCommand(win.socket, 'show', 'workbench').ok);
  await expectOk(client, 'set_view', { view: 'assembly' }, 'Switched the workbench to the assembly view.');
  assert.equal(JSON.parse((await expectOk(client, 'current_view', {})).text).view, 'assembly');

  // Changing the project.
  await expectOk(client, 'list_marks', {}, 'Nothing is written into the project for license yet.');
  await expectOk(client, 'rename_function', { function: check, new_name: 'verify_key' },
    "Renamed check_license to verify_key in the user's project.");
  await expectOk(client, 'add_note', { function: 'verify_key', note: 'Compares the key against a hard-coded hash.' },
    "Added a note on verify_key in the user's project.");
  await expectOk(client, 'add_comment', { address: inside, comment: 'hash the key' },
    `Added a comment at ${inside} in the user's project.`);
  await expectOk(client, 'bookmark', { address: 'main', label: 'start here' },
    `Bookmarked ${main} as "start here" in the user's project.`);
  await expectOk(client, 'bookmark', { address: inside }, `Bookmarked ${inside} in the user's project.`);
  const procedure = hex(NM.get('main') + 8n);
  await expectOk(client, 'set_code_type', { address: procedure, type: 'procedure' },
    `Started a function at ${procedure} (${ghidra(NM.get('main') + 8n)}) in the user's project.`);
  await expectOk(client, 'open_function', { function: ghidra(NM.get('main') + 8n) },
    `Showing ${ghidra(NM.get('main') + 8n)} (${procedure}) to the user.`);
  await expectOk(client, 'set_number_format', { address: inside, format: 'decimal' },
    `The number at ${inside} now reads as decimal in the user's project.`);
  await expectError(client, 'set_number_format', { address: '0x10', format: 'hex' }, /not in any loaded section/);
  const patch = await expectOk(client, 'propose_patch', { address: check, bytes: '1f2003d5', reason: 'Skips the check.' });
  assert.ok(patch.text.startsWith(`Suggested to the user: Patch ${check} to 1f 20 03 d5`), patch.text);

  const bookmarks = [[BigInt(inside), `bookmark at ${inside}`], [NM.get('main'), `bookmark at ${main}: start here`]]
    .sort((x, y) => (x[0] < y[0] ? -1 : 1)).map((x) => x[1]);
  await expectOk(client, 'list_marks', {}, [
    `renamed ${check} to verify_key`,
    ...bookmarks,
    'note on verify_key: Compares the key against a hard-coded hash.',
    `comment at ${inside}: hash the key`,
    `code type at ${procedure}: procedure`,
    `number format at ${inside}: decimal`,
    `waiting for the user's review: Patch ${check} to 1f 20 03 d5`,
  ].join('\n'));

  // Emptying a note or comment removes it.
  await expectOk(client, 'add_note', { function: 'verify_key', note: '' }, "Removed the note on verify_key from the user's project.");

  // The person's side: every change logged with agent and chat; undo walks back.
  const history = windowCommand(win.socket, 'history');
  assert.ok(history.ok, history.text);
  assert.match(history.text, new RegExp(`^#1 \\S+ Claude \\(chat c_123\\): renamed ${check} to verify_key$`, 'm'));
  assert.equal(history.text.split('\n').length, 8);
  assert.ok(windowCommand(win.socket, 'undo').ok);  // the note's removal
  await expectOk(client, 'open_function', { function: 'verify_key' }, `Showing verify_key (${check}) to the user.`);
  const marks = (await expectOk(client, 'list_marks', {})).text;
  assert.match(marks, /^note on verify_key: Compares the key against a hard-coded hash\.$/m);
  assert.match(windowCommand(win.socket, 'history').text, /\(undone\)$/);

  // The project file survives a restart of the window.
  await stopWindow(win);
  const again = await startWindow(home, [path.join(home, 'license')]);
  await expectOk(client, 'list_marks', {}, marks);
  await stopWindow(again);
});

// Issue 16 item 7: the window writes nothing beside the binary, and leaves no lock behind.
const projectsOf = (home) => path.join(home, '.local', 'share', 'eleven', 'projects');
const statusOf = (win) => JSON.parse(windowCommand(win.socket, 'status').text);
const lockOf = (project) => path.join(path.dirname(project), '.' + path.basename(project) + '.lock');

test('the window writes nothing beside the binary: project, lock and patched copy are in the data folder', async () => {
  const home = scratchHome();
  const bin = path.join(home, 'bin');
  fs.mkdirSync(bin);
  fs.copyFileSync(path.join(home, 'license'), path.join(bin, 'license'));
  const before = fs.readdirSync(bin).sort();
  const win = await startWindow(home, [path.join(bin, 'license')]);
  const { project } = statusOf(win);
  assert.equal(path.dirname(path.dirname(project)), projectsOf(home));
  assert.match(path.basename(path.dirname(project)), /^license-[0-9a-f]{8}$/);
  assert.equal(path.basename(project), 'license.eleven.json');
  assert.ok(fs.existsSync(lockOf(project)));
  const client = await connect(home, { bridge: win.socket });
  const check = hex(NM.get('check_license'));
  await expectOk(client, 'rename_function', { function: check, new_name: 'verify_key' });
  await expectOk(client, 'propose_patch', { address: check, bytes: 'c3', reason: 'Return at once.' });
  assert.ok(windowCommand(win.socket, 'accept', '1').ok);
  assert.deepEqual(fs.readdirSync(bin).sort(), before, 'nothing was written beside the binary');
  assert.ok(fs.existsSync(project));
  assert.ok(fs.existsSync(path.join(path.dirname(project), 'license.patched')));
  await stopWindow(win);
  // XDG_DATA_HOME names the data folder when it is set.
  const data = path.join(home, 'data');
  const proc = spawn(WINDOW, ['serve', path.join(bin, 'license'), '--socket', path.join(home, 'x.sock')],
    { env: { ...windowEnv(home), XDG_DATA_HOME: data }, stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise((resolve) => proc.stdout.on('data', (d) => { if (String(d).includes('ELEVEN_BRIDGE=')) resolve(); }));
  assert.equal(path.dirname(path.dirname(statusOf({ socket: path.join(home, 'x.sock') }).project)), path.join(data, 'eleven', 'projects'));
  await stopWindow({ proc });
});

test('the lock is removed on every exit path: SIGTERM, SIGINT, SIGHUP, close, and opening another binary', async () => {
  const home = scratchHome();
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    const win = await startWindow(home, [path.join(home, 'license')]);
    const { project } = statusOf(win);
    assert.ok(fs.existsSync(lockOf(project)), signal);
    const exited = new Promise((resolve) => win.proc.on('exit', (code) => resolve(code)));
    win.proc.kill(signal);
    assert.equal(await exited, 0, `${signal} ends the window cleanly`);
    assert.equal(fs.existsSync(lockOf(project)), false, `the lock is gone after ${signal}`);
    assert.equal(fs.existsSync(win.socket), false, `the socket is gone after ${signal}`);
  }
  const win = await startWindow(home, [path.join(home, 'license')]);
  const first = statusOf(win).project;
  assert.ok(windowCommand(win.socket, 'open', path.join(home, 'license-stripped')).ok);
  const second = statusOf(win).project;
  assert.notEqual(second, first);
  assert.equal(fs.existsSync(lockOf(first)), false, 'opening another binary removes the old lock');
  assert.ok(fs.existsSync(lockOf(second)));
  assert.ok(windowCommand(win.socket, 'close').ok);
  assert.equal(fs.existsSync(lockOf(second)), false, 'close removes the lock');
  await stopWindow(win);
});

test('a project an earlier window kept beside the binary is read, then saved in the data folder', async () => {
  const home = scratchHome();
  const check = hex(NM.get('check_license'));
  // An old window wrote the project beside the binary (the default then).
  const legacy = path.join(home, 'license.eleven.json');
  let win = await startWindow(home, [path.join(home, 'license'), '--project', legacy]);
  let client = await connect(home, { bridge: win.socket });
  await expectOk(client, 'rename_function', { function: check, new_name: 'verify_key' });
  await stopWindow(win);
  const legacyText = fs.readFileSync(legacy, 'utf8');
  win = await startWindow(home, [path.join(home, 'license')]);
  const { project } = statusOf(win);
  assert.equal(path.dirname(path.dirname(project)), projectsOf(home));
  client = await connect(home, { bridge: win.socket });
  assert.match((await expectOk(client, 'list_marks', {})).text, new RegExp(`renamed ${check} to verify_key`));
  await expectOk(client, 'add_note', { function: 'verify_key', note: 'Hashes the key.' });
  assert.ok(fs.readFileSync(project, 'utf8').includes('Hashes the key.'));
  assert.equal(fs.readFileSync(legacy, 'utf8'), legacyText, 'the old file is left as it was');
  await stopWindow(win);
});

test('a window restarted at the same --socket keeps its ELEVEN_BRIDGE, as the README\'s client entry needs', async () => {
  // The README's client entry and the command it says to start the window with name one path.
  const readme = fs.readFileSync(path.join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
  const entry = /"ELEVEN_BRIDGE": "([^"]+)"/.exec(readme);
  const command = /toolhost-window serve \S+ --socket (\S+)/.exec(readme);
  assert.ok(entry && command, 'the README shows the client entry and the serve command');
  assert.equal(command[1], entry[1]);
  const home = scratchHome();
  const socket = path.join(home, 'fixed.sock');
  let win = await startWindow(home, [path.join(home, 'license')], socket);
  const client = await connect(home, { bridge: socket });
  await expectOk(client, 'current_view', {});
  await stopWindow(win);
  win = await startWindow(home, [path.join(home, 'license')], socket);
  await expectOk(client, 'current_view', {});  // the same entry reaches the restarted window
  await stopWindow(win);
});

test('the stripped binary shows FUN_<address> at the addresses nm reports for the unstripped build', async () => {
  const home = scratchHome();
  const win = await startWindow(home, [path.join(home, 'license-stripped')]);
  const client = await connect(home, { bridge: win.socket });
  for (const name of ['check_license', 'hash_key', 'compare_hash', 'print_banner', 'main']) {
    const address = NM.get(name);
    await expectOk(client, 'open_function', { function: ghidra(address) }, `Showing ${ghidra(address)} (${hex(address)}) to the user.`);
    await expectOk(client, 'open_function', { function: hex(address) }, `Showing ${ghidra(address)} (${hex(address)}) to the user.`);
  }
  // PLT stubs are named after their imports, at the addresses objdump shows for <name@plt>.
  const objdump = execFileSync('objdump', ['-d', path.join(home, 'license-stripped')], { encoding: 'utf8' });
  const plt = [...objdump.matchAll(/^([0-9a-f]+) <(\w+)@plt>:$/gm)].map((m) => [m[2], BigInt('0x' + m[1])]);
  assert.ok(plt.some(([name]) => name === 'puts'));
  for (const [name, address] of plt) {
    await expectOk(client, 'open_function', { function: name }, `Showing ${name} (${hex(address)}) to the user.`);
  }
  await expectError(client, 'open_function', { function: 'check_license' }, /There is no function named "check_license"/);
  await expectOk(client, 'rename_function', { function: ghidra(NM.get('check_license')), new_name: 'check_license' },
    `Renamed ${ghidra(NM.get('check_license'))} to check_license in the user's project.`);
  await expectOk(client, 'open_function', { function: 'check_license' }, `Showing check_license (${hex(NM.get('check_license'))}) to the user.`);
  await stopWindow(win);
});

test('review on: edits become suggestions the user accepts or rejects, and nothing asks first', async () => {
  const home = scratchHome();
  const win = await startWindow(home, [path.join(home, 'license'), '--review']);
  // eleven-review sets rename and annotate rows to "ask" with the host's review setting on; the
  // test client cannot be asked, so any question would be a refusal.
  const client = await connect(home, { server: 'eleven-review', bridge: win.socket });
  const check = hex(NM.get('check_license'));
  const renamed = await expectOk(client, 'rename_function', { function: 'check_license', new_name: 'verify_key' });
  assert.equal(renamed.text, 'Suggested to the user: Rename check_license to verify_key. It waits for their review in the Changes tab.');
  const noted = await expectOk(client, 'add_note', { function: 'check_license', note: 'Hashes the key.' });
  assert.ok(noted.text.startsWith('Suggested to the user'), noted.text);
  await expectOk(client, 'list_marks', {}, [
    "waiting for the user's review: Rename check_license to verify_key",
    "waiting for the user's review: Note on check_license: Hashes the key.",
  ].join('\n'));
  // Another agent's suggestions are not this agent's marks.
  const other = await connect(home, { server: 'eleven-review', bridge: win.socket, agent: 'Other' });
  await expectOk(other, 'list_marks', {}, 'Nothing is written into the project for license yet.');

  assert.match(windowCommand(win.socket, 'suggestions').text, /^#1 waiting Claude \(chat c_123\): Rename check_license to verify_key$/m);
  assert.ok(windowCommand(win.socket, 'accept', '1').ok);
  assert.ok(windowCommand(win.socket, 'reject', '2').ok);
  assert.equal(windowCommand(win.socket, 'accept', '2').ok, false);
  await expectOk(client, 'list_marks', {}, `renamed ${check} to verify_key`);
  assert.match(windowCommand(win.socket, 'history').text, /Claude \(chat c_123\): accepted suggestion #1: Rename check_license to verify_key/);

  // Review off again: edits are saved at once.
  assert.ok(windowCommand(win.socket, 'review', 'off').ok);
  await expectOk(client, 'add_note', { function: 'verify_key', note: 'Hashes the key.' }, "Added a note on verify_key in the user's project.");
  await stopWindow(win);
});

test('an accepted patch writes a patched copy and leaves the original byte-identical', async () => {
  const home = scratchHome();
  const original = path.join(home, 'license');
  const before = sha256(original);
  const win = await startWindow(home, [original]);
  const client = await connect(home, { bridge: win.socket });
  const check = hex(NM.get('check_license'));
  // The patch row is "ask" in the test config; propose_patch only files a suggestion, so it must not ask.
  const patch = [0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3]; // mov eax, 1; ret: every key is valid
  await expectOk(client, 'propose_patch', { address: check, bytes: 'b8 01 00 00 00 c3', reason: 'Accepts every key.' },
    `Suggested to the user: Patch ${check} to b8 01 00 00 00 c3 (Accepts every key.). Nothing is saved until they ` +
    'accept it in the Changes tab, and then Eleven writes a patched copy, never the original file.');
  // The copy goes to the project's folder (in the data folder, never beside the binary).
  const copy = path.join(path.dirname(JSON.parse(windowCommand(win.socket, 'status').text).project), 'license.patched');
  assert.equal(fs.existsSync(copy), false);
  const accepted = windowCommand(win.socket, 'accept', '1');
  assert.ok(accepted.ok, accepted.text);
  assert.equal(accepted.text, `Accepted #1: Patch ${check} to b8 01 00 00 00 c3. Wrote the patched copy to ` +
    `${copy}; the original file is unchanged.`);
  assert.equal(sha256(original), before);
  const a = fs.readFileSync(original);
  const b = fs.readFileSync(copy);
  assert.equal(b.length, a.length);
  const differing = [];
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) differing.push(i);
  assert.ok(differing.length >= 1 && differing.length <= patch.length, `${differing.length} bytes differ`);
  // Some offset holds the whole patch and covers every differing byte.
  const last = differing[differing.length - 1];
  let found = false;
  for (let o = Math.max(0, last - patch.length + 1); o <= differing[0]; o++) {
    if (patch.every((byte, i) => b[o + i] === byte)) found = true;
  }
  assert.ok(found, 'the patch bytes are not in the copy');
  // The copy runs and takes the patched path; the original still checks the key.
  const lines = (file) => spawnSync(file, ['wrong-key'], { encoding: 'utf8' }).stdout.split('\n');
  assert.ok(lines(copy).includes('valid'));
  assert.ok(lines(original).includes('invalid key of length 9'));
  await stopWindow(win);
});

test('a window killed mid-call gives an error within the timeout, and the first call after its restart succeeds', async () => {
  const home = scratchHome();
  const binary = path.join(home, 'license');
  let win = await startWindow(home, [binary]);
  const client = await connect(home, { bridge: win.socket });
  await expectOk(client, 'current_view', {});

  // A window that stops answering: the call fails at the timeout, and the next one still works.
  win.proc.kill('SIGSTOP');
  let started = Date.now();
  await expectError(client, 'list_marks', {}, `The Eleven window did not answer list_marks within ${TIMEOUT_MS} ms.`);
  assert.ok(Date.now() - started < TIMEOUT_MS + 5000);
  // A stopped window whose connection queue is full: a fresh server's first call must not hang
  // in connect either.
  const fillers = [];
  for (let i = 0; i < 64; i++) {
    const c = net.createConnection(win.socket);
    c.on('error', () => {});
    fillers.push(c);
  }
  await new Promise((r) => setTimeout(r, 200));
  const fresh = await connect(home, { bridge: win.socket });
  started = Date.now();
  await expectError(fresh, 'current_view', {}, /did not accept a connection for current_view within|did not answer current_view within/);
  assert.ok(Date.now() - started < TIMEOUT_MS + 5000);
  for (const c of fillers) c.destroy();
  win.proc.kill('SIGCONT');
  await expectOk(client, 'list_marks', {}, 'Nothing is written into the project for license yet.');
  await expectOk(fresh, 'current_view', {});

  // A window killed while the call waits.
  win.proc.kill('SIGSTOP');
  started = Date.now();
  const pending = call(client, 'open_function', { function: 'main' });
  await new Promise((r) => setTimeout(r, 300));
  const exited = new Promise((r) => win.proc.on('exit', r));
  win.proc.kill('SIGKILL');
  await exited;
  const r = await pending;
  assert.equal(r.error, true);
  assert.match(r.text, /closed the connection|did not answer/);
  assert.ok(Date.now() - started < TIMEOUT_MS + 5000);
  await expectError(client, 'current_view', {}, /No Eleven window is listening/);

  win = await startWindow(home, [binary], win.socket);
  await expectOk(client, 'open_function', { function: 'main' }, `Showing main (${hex(NM.get('main'))}) to the user.`);
  await stopWindow(win);
});

test('malformed bridge replies each become a tool error, and the next call works', async () => {
  const home = scratchHome();
  const socket = path.join(home, 'fake.sock');
  const plan = [];
  // A fake window: answers each request as the next entry of `plan` says.
  const server = net.createServer((conn) => {
    conn.on('error', () => {});
    let buffer = '';
    conn.on('data', (d) => {
      buffer += d;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const request = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        assert.equal(request.from.agent, 'Claude');
        assert.equal(request.from.chat, 'c_123');
        const mode = plan.shift() ?? 'good';
        const id = request.id;
        if (mode === 'good') conn.write(JSON.stringify({ id, ok: true, text: `fine ${request.tool}` }) + '\n');
        else if (mode === 'window-error') conn.write(JSON.stringify({ id, ok: false, error: 'The window says no.' }) + '\n');
        else if (mode === 'truncated') conn.end(`{"id":${id},"ok":tr`);
        else if (mode === 'wrong-id') conn.write(JSON.stringify({ id: id + 1000, ok: true, text: 'not yours' }) + '\n');
        else if (mode === 'non-json') conn.write('this is not JSON\n');
        else if (mode === 'closed') conn.destroy();
        else if (mode === 'huge') {
          const line = Buffer.alloc(64 << 20, 0x61);
          line.write(`{"id":${id},"ok":true,"text":"`, 0);
          line.write('"}\n', line.length - 3);
          conn.write(line);
        }
      }
    });
  });
  await new Promise((r) => server.listen(socket, r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  const client = await connect(home, { bridge: socket });

  const cases = [
    ['window-error', /^The window says no\.$/],
    ['truncated', /closed the connection in the middle of its answer to list_marks/],
    ['wrong-id', /answered list_marks with id \d+ instead of id \d+/],
    ['huge', /answer to list_marks is longer than \d+ bytes/],
    ['non-json', /answer to list_marks is not a JSON object/],
    ['closed', /closed the connection before answering list_marks/],
  ];
  for (const [mode, pattern] of cases) {
    plan.push(mode);
    await expectError(client, 'list_marks', {}, pattern);
    await expectOk(client, 'list_marks', {}, 'fine list_marks');
  }
});
