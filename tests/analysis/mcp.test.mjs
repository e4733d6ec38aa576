// Integration tests of issue 23 through toolhost over MCP with the official TypeScript SDK
// client: every tool of the `analysis` server answers with REA's documented shape (checked with
// schemas written here from the reference's tool catalog, not from the server's own), lists page,
// bytes match the file, and bad binaries get clear errors while the server keeps serving.
// Expected values come from readelf, objdump and the file's own bytes at run time.
//
// Environment (set by CTest): TOOLHOST_BIN, ANALYSIS_FIXTURE_DIR.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { isolationEnv } from '../toolhost_env.mjs';

const TOOLHOST = process.env.TOOLHOST_BIN;
const FIXTURES = process.env.ANALYSIS_FIXTURE_DIR;
if (!TOOLHOST || !FIXTURES) throw new Error('TOOLHOST_BIN and ANALYSIS_FIXTURE_DIR must be set; run this test through ctest');
const CONFIG = path.join(import.meta.dirname, 'analysis-test.toml');
// The JSON Schema validator the official SDK itself uses.
const Ajv = createRequire(createRequire(import.meta.url).resolve('@modelcontextprotocol/sdk/package.json'))('ajv');
const ajv = new (Ajv.default ?? Ajv)({ allErrors: true, strict: false });

const TOOLS = ['open_binary', 'list_documents', 'binary_overview', 'list_segments', 'list_procedures', 'list_names',
  'list_strings', 'search_procedures', 'search_strings', 'procedure_address', 'procedure_info', 'procedure_assembly',
  'procedure_pseudo_code', 'read_function_instructions', 'procedure_callers', 'procedure_callees',
  'procedure_references', 'resolve_containing_procedure', 'xrefs', 'address_name', 'read_bytes',
  'address_to_file_offset', 'analyze_function', 'get_call_graph', 'find_xrefs_to_name', 'find_code_for_string'];

// ---- REA's shapes, from the reference (rea-and-re-servers.md, 1.4: result envelope, list
// page, and each tool's result column) ------------------------------------------------------
const str = { type: 'string' };
const int = { type: 'integer', minimum: 0 };
const bool = { type: 'boolean' };
const orNull = (s) => ({ anyOf: [s, { type: 'null' }] });
const obj = (properties, required = Object.keys(properties)) => ({ type: 'object', properties, required });
const arr = (items) => ({ type: 'array', items });
const hex = { type: 'string', pattern: '^0x[0-9a-f]+$' };
const page = (item) => obj({ items: arr(item), offset: int, limit: int, total: int, has_more: bool, next_offset: orNull(int) });
const bounded = (item) => obj({ items: arr(item), total: orNull(int), returned: int, truncated: bool, next_offset: orNull(int) });
const classification = orNull(obj({ external: bool, thunk: bool, thunk_target: orNull(str), provenance: str }));
const identity = obj({ address: hex, name: str, classification });
const refKinds = ['call', 'jump', 'data', 'read', 'write', 'indirect', 'computed', 'external'];
const edge = obj({
  source_address: hex, target_address: hex, source_procedure: orNull(identity), target_procedure: orNull(identity),
  kind: obj({ available: bool, ...Object.fromEntries(refKinds.map((k) => [k, bool])) }, ['available', ...refKinds]),
});
const containing = {
  oneOf: [obj({ found: { const: true }, procedure: identity, query_address: hex }),
    obj({ found: { const: false }, procedure: { type: 'null' }, reason: { enum: ['outside_segments', 'not_in_procedure'] }, query_address: hex })],
};
const addressItem = obj({ address: hex, value: str, value_truncated: bool });
const region = obj({ name: str, start: hex, end: hex, image_base: hex, address_space: str, executable: orNull(bool),
  readable: orNull(bool), writable: orNull(bool), initialized: bool, overlay: bool, permissions: { type: 'object' }, provenance: str });
const RESULT = {
  open_binary: obj({ path: str, sha256: { type: 'string', pattern: '^[a-f0-9]{64}$' }, format: { enum: ['elf', 'pe'] },
    kind: str, architecture: orNull({ enum: ['x86', 'x86_64', 'arm', 'arm64'] }), loaderArgs: arr(str) }),
  list_documents: arr(str),
  binary_overview: obj({ document: str, procedure_count: int, string_count: int, segment_count: int,
    segments: arr(obj({ name: str, start: hex, end: hex })), detail: { enum: ['concise', 'detailed'] } }),
  list_segments: arr({ ...region, properties: { ...region.properties, sections: arr(region) }, required: [...region.required, 'sections'] }),
  list_procedures: page({ ...addressItem, properties: { ...addressItem.properties, procedure: obj({ external: bool, thunk: bool, thunk_target: orNull(str) }) } }),
  list_names: page(addressItem),
  list_strings: page({ ...addressItem, properties: { ...addressItem.properties, string: obj({ encoding: str, termination: str, byte_length: int }) } }),
  search_procedures: page(addressItem),
  search_strings: page(addressItem),
  procedure_address: hex,
  procedure_info: obj({ name: str, entrypoint: hex, length: int, basicblock_count: int, signature: orNull(str),
    locals: arr({ type: 'object' }), classification }),
  procedure_assembly: str,
  procedure_pseudo_code: orNull(str),
  read_function_instructions: obj({ procedure: identity, instructions: bounded(str), instructions_scanned: int,
    instruction_scan_truncated: bool, limitations: arr(str) }),
  procedure_callers: arr(hex),
  procedure_callees: arr(hex),
  procedure_references: obj({ procedure: identity, direction: { enum: ['incoming', 'outgoing'] }, references: bounded(edge),
    instructions_scanned: int, instruction_scan_truncated: bool }),
  resolve_containing_procedure: containing,
  xrefs: arr(hex),
  address_name: orNull(str),
  read_bytes: obj({ address: hex, bytes_hex: { type: 'string', pattern: '^([0-9a-f]{2})*$' }, requested_bytes: int,
    returned_bytes: int, complete: bool }),
  address_to_file_offset: obj({ address: hex, file_offset: int }),
  analyze_function: obj({ procedure: obj({ address: hex, name: str, classification }, ['address', 'name']),
    pseudocode: { type: 'object' }, assembly: bounded(str), comments: bounded({ type: 'object' }), callers: bounded(identity),
    callees: bounded(identity), incoming_references: bounded(edge), outgoing_references: bounded(edge),
    referenced_strings: bounded(obj({ address: hex, value: str, source_address: hex })),
    referenced_names: bounded(obj({ address: hex, value: str, source_address: hex })),
    basic_blocks: bounded(obj({ start: hex, end: hex, successors: arr(hex) })), limitations: arr(str) }),
  get_call_graph: { type: 'object', additionalProperties: arr({ oneOf: [
    obj({ address: hex, status: { const: 'ok' }, calls: arr(hex) }), obj({ address: hex, status: { const: 'error' }, error: { type: 'object' } })] }) },
  find_xrefs_to_name: { oneOf: [obj({ status: { const: 'resolved' }, name: str, address: hex, xrefs: arr(hex) }),
    obj({ status: { const: 'unresolved' }, reason: { const: 'name_not_found' } }, ['status', 'reason'])] },
  find_code_for_string: obj({ query: str, search_mode: { const: 'literal' }, matches: arr(obj({ address: hex, value: str })),
    references: arr(obj({ target_address: hex, source_address: hex, containing_procedure: containing })),
    operations_used: int, operation_budget: int, truncated: bool, residual_unknowns: arr(str) }),
};
const SESSION = new Set(['open_binary']);  // REA's session tools answer {result} without evidence
const envelope = (name) => (SESSION.has(name)
  ? obj({ result: RESULT[name] })
  : obj({ result: RESULT[name], evidence_id: { type: 'string', pattern: '^ev_[a-f0-9]{64}$' },
    evidence_uri: { type: 'string', pattern: '^rea://evidence/ev_[a-f0-9]{64}$' } }));
const validators = Object.fromEntries(TOOLS.map((t) => [t, ajv.compile(envelope(t))]));
const checked = new Set();

// ---- the client ------------------------------------------------------------------------------
const cleanups = [];
after(async () => { for (const fn of cleanups.reverse()) await fn(); });
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'analysis-it-'));
cleanups.push(() => fs.rmSync(scratch, { recursive: true, force: true }));

async function connect(server = 'analysis') {
  const transport = new StdioClientTransport({
    command: TOOLHOST, args: ['--config', CONFIG, '--server', server],
    env: { PATH: process.env.PATH, HOME: scratch, ...isolationEnv() }, stderr: 'pipe',
  });
  const client = new Client({ name: 'analysis-test', version: '1.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return client;
}

async function call(client, name, args = {}, options = {}) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...options });
  const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  return { error: r.isError === true, text, structured: r.structuredContent, content: r.content ?? [] };
}

async function ok(client, name, args = {}, options = {}) {
  const r = await call(client, name, args, options);
  assert.equal(r.error, false, `${name} ${JSON.stringify(args)} failed: ${r.text}`);
  const validate = validators[name];
  assert.ok(validate(r.structured), `${name}'s answer is not REA's shape: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(r.structured).slice(0, 800)}`);
  checked.add(name);
  return r.structured.result;
}

async function refused(client, name, args, pattern) {
  const r = await call(client, name, args);
  assert.equal(r.error, true, `${name} ${JSON.stringify(args)} should have failed but answered ${r.text.slice(0, 300)}`);
  assert.match(r.text, pattern);
  return r.text;
}

// Every item of a list tool, page by page, checking the page arithmetic on the way.
async function everyPage(client, name, args, limit) {
  const items = [];
  let offset = 0;
  for (;;) {
    const p = await ok(client, name, { ...args, offset, limit });
    assert.equal(p.offset, offset);
    assert.equal(p.limit, limit);
    assert.ok(p.items.length <= limit);
    items.push(...p.items);
    assert.equal(p.has_more, items.length < p.total);
    if (!p.has_more) {
      assert.equal(p.next_offset, null);
      assert.equal(items.length, p.total);
      return items;
    }
    assert.equal(p.next_offset, offset + p.items.length);
    offset = p.next_offset;
  }
}

// ---- oracles ---------------------------------------------------------------------------------
const sh = (cmd, args) => execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
function sections(file) {
  const out = [];
  if (fs.readFileSync(file).subarray(0, 2).toString() === 'MZ') {
    for (const line of sh('objdump', ['-h', '-w', file]).split('\n')) {
      const m = /^\s*\d+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s/.exec(line);
      if (m) out.push({ name: m[1], type: 'PROGBITS', address: BigInt('0x' + m[3]), offset: Number('0x' + m[4]), size: Number('0x' + m[2]), flags: 'A' });
    }
    return out;
  }
  for (const line of sh('readelf', ['-SW', file]).split('\n')) {
    const m = /^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([A-Za-z]*)\s/.exec(line);
    if (m) out.push({ name: m[1], type: m[2], address: BigInt('0x' + m[3]), offset: Number('0x' + m[4]), size: Number('0x' + m[5]), flags: m[6] });
  }
  return out;
}
// objdump's direct calls to each <name@plt> entry: name -> { address, callers: Set of call sites }.
function pltCalls(file) {
  const plt = new Map();
  for (const line of sh('objdump', ['-d', '--no-show-raw-insn', '-w', file]).split('\n')) {
    let m = /^([0-9a-f]+) <([^@>]+)@plt>:$/.exec(line);
    if (m) { plt.set(m[2], { address: BigInt('0x' + m[1]), callers: new Set() }); continue; }
    m = /^\s*([0-9a-f]+):\s+(?:[a-z0-9.]+\s+)*?call[lq]?\s+[0-9a-f]+ <([^@>]+)@plt>/.exec(line);
    if (m && plt.has(m[2])) plt.get(m[2]).callers.add('0x' + m[1]);
  }
  return plt;
}
const toHex = (n) => '0x' + n.toString(16);
const sha256 = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

const LS = '/usr/bin/ls';
const ENOUGH = path.join(FIXTURES, 'enough');

let client;
before(async () => { client = await connect(); });

test('the server lists REA\'s read-only tools, and answers before a binary is open', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  for (const t of tools) {
    assert.equal(t.annotations?.readOnlyHint, true, t.name);
    assert.equal(t.outputSchema?.type, 'object', t.name);
  }
  await refused(client, 'list_procedures', {}, /No binary is open: call open_binary/);
  assert.deepEqual(await ok(client, 'list_documents'), []);
});

test('open_binary analyses a program from /usr/bin and names it by its SHA-256', async () => {
  const r = await ok(client, 'open_binary', { path: LS });
  assert.equal(r.path, LS);
  assert.equal(r.sha256, sha256(LS));
  assert.equal(r.format, 'elf');
  assert.equal(r.architecture, 'x86_64');
  assert.deepEqual(await ok(client, 'list_documents'), ['ls']);
  const overview = await ok(client, 'binary_overview', { detail: 'detailed', limit: 2 });
  assert.equal(overview.document, 'ls');
  assert.ok(overview.segments.length <= 2);
  assert.ok(overview.procedure_count > 100);
  for (const s of overview.segments) assert.equal(BigInt(s.end) - BigInt(s.start), BigInt(s.length));
});

test('lists page through everything, and the pages add up', async () => {
  await ok(client, 'open_binary', { path: LS });
  const procedures = await everyPage(client, 'list_procedures', {}, 97);
  const addresses = procedures.map((p) => BigInt(p.address));
  for (let i = 1; i < addresses.length; i++) assert.ok(addresses[i] > addresses[i - 1], 'procedures are sorted by address');
  const overview = await ok(client, 'binary_overview');
  assert.equal(procedures.length, overview.procedure_count);
  const strings = await everyPage(client, 'list_strings', {}, 500);
  assert.equal(strings.length, overview.string_count);
  const names = await everyPage(client, 'list_names', {}, 500);
  assert.ok(names.length >= procedures.length);
  // One address: list_strings and list_names filter to it.
  const one = await ok(client, 'list_strings', { address: strings[3].address });
  assert.deepEqual(one.items.map((s) => s.address), [strings[3].address]);
  await refused(client, 'list_procedures', { limit: 501 }, /limit must be a whole number from 1 to 500/);
  await refused(client, 'search_strings', { pattern: 'a', limit: 101 }, /limit must be a whole number from 1 to 100/);
  // Past the end: an empty last page.
  const beyond = await ok(client, 'list_procedures', { offset: procedures.length + 5, limit: 10 });
  assert.deepEqual(beyond.items, []);
  assert.equal(beyond.has_more, false);
});

test('search finds procedures and strings, literally or by regular expression', async () => {
  await ok(client, 'open_binary', { path: LS });
  const plt = pltCalls(LS);
  const [name] = [...plt.keys()].filter((n) => n.length > 5);
  const found = await ok(client, 'search_procedures', { pattern: name.toUpperCase() });
  assert.ok(found.items.some((i) => i.value === name && BigInt(i.address) === plt.get(name).address));
  assert.equal((await ok(client, 'search_procedures', { pattern: name.toUpperCase(), case_sensitive: true })).total, 0);
  const rodata = sections(LS).find((s) => s.name === '.rodata');
  const text = sh('strings', ['-a', '-n', '12', '-t', 'x', LS]).split('\n').map((l) => /^\s*([0-9a-f]+) (.+)$/.exec(l))
    .filter((m) => m && Number('0x' + m[1]) >= rodata.offset && Number('0x' + m[1]) < rodata.offset + rodata.size)
    .map((m) => m[2]).find((s) => /^[A-Za-z ]+$/.test(s));
  assert.ok(text, 'a plain string in .rodata');
  const hits = await ok(client, 'search_strings', { pattern: text });
  assert.ok(hits.items.some((i) => i.value.includes(text)));
  const regex = await ok(client, 'search_strings', { pattern: '^' + text.slice(0, 6).replace(/ /g, '\\s') + '.*', mode: 'regex' });
  assert.ok(regex.total >= 1);
  await refused(client, 'search_strings', { pattern: '(unclosed', mode: 'regex' }, /not a regular expression/);
});

test('read_bytes answers the file\'s bytes at address_to_file_offset', async () => {
  await ok(client, 'open_binary', { path: LS });
  const file = fs.readFileSync(LS);
  let compared = 0;
  for (const s of sections(LS)) {
    if (!s.flags.includes('A') || s.type === 'NOBITS' || s.size === 0) continue;
    for (const delta of [0, Math.floor(s.size / 3)]) {
      const address = toHex(s.address + BigInt(delta));
      const where = await ok(client, 'address_to_file_offset', { address });
      assert.equal(where.file_offset, s.offset + delta, `${s.name} ${address}`);
      const bytes = await ok(client, 'read_bytes', { address, length: 64 });
      const expected = file.subarray(where.file_offset, where.file_offset + bytes.returned_bytes).toString('hex');
      assert.equal(bytes.bytes_hex, expected, `${s.name} ${address}`);
      assert.equal(bytes.bytes_hex.length, 2 * bytes.returned_bytes);
      compared++;
    }
  }
  assert.ok(compared > 10);
  // The segments are the PT_LOAD program headers, each holding the sections that start in it.
  const segments = await ok(client, 'list_segments');
  const loads = sh('readelf', ['-lW', LS]).split('\n').filter((l) => /^\s*LOAD\s/.test(l))
    .map((l) => l.trim().split(/\s+/)).map((f) => ({ start: BigInt(f[2]), size: BigInt(f[5]) }));
  assert.deepEqual(segments.map((s) => [BigInt(s.start), BigInt(s.end) - BigInt(s.start)]), loads.map((l) => [l.start, l.size]));
  const text = sections(LS).find((s) => s.name === '.text');
  assert.ok(segments.some((s) => s.executable && s.sections.some((x) => x.name === '.text' && BigInt(x.start) === text.address)));
  const bss = sections(LS).find((s) => s.type === 'NOBITS' && s.flags.includes('A'));
  await refused(client, 'address_to_file_offset', { address: toHex(bss.address + 1n) }, /has no bytes in the file/);
  await refused(client, 'read_bytes', { address: '0xffffffffff000000' }, /is not in any segment/);
  await refused(client, 'read_bytes', { address: 'main' }, /is not an address: write it in hexadecimal/);
});

test('procedures: address, info, assembly, instructions, callers, callees, references', async () => {
  await ok(client, 'open_binary', { path: LS });
  const plt = pltCalls(LS);
  const [name, entry] = [...plt.entries()].find(([, v]) => v.callers.size >= 2);
  assert.equal(await ok(client, 'procedure_address', { procedure: name }), toHex(entry.address));
  assert.equal(await ok(client, 'procedure_address', { procedure: toHex(entry.address + 2n) }), toHex(entry.address));
  assert.equal(await ok(client, 'address_name', { address: toHex(entry.address) }), name);
  assert.equal(await ok(client, 'address_name', { address: toHex(entry.address + 1n) }), null);
  const info = await ok(client, 'procedure_info', { procedure: name });
  assert.equal(info.name, name);
  assert.equal(info.classification.thunk, true);
  // Who calls the PLT entry: the procedures around objdump's call sites.
  const callers = await ok(client, 'procedure_callers', { procedure: name });
  const expected = new Set();
  for (const site of entry.callers) {
    const c = await ok(client, 'resolve_containing_procedure', { address: site });
    assert.equal(c.found, true, site);
    expected.add(c.procedure.address);
  }
  assert.deepEqual(new Set(callers), expected);
  assert.deepEqual(new Set(await ok(client, 'xrefs', { address: toHex(entry.address) })), entry.callers);
  const named = await ok(client, 'find_xrefs_to_name', { name });
  assert.equal(named.status, 'resolved');
  assert.deepEqual(new Set(named.xrefs), entry.callers);
  assert.equal((await ok(client, 'find_xrefs_to_name', { name: 'no_such_name_here' })).status, 'unresolved');
  const caller = [...expected][0];
  assert.ok((await ok(client, 'procedure_callees', { procedure: caller })).includes(toHex(entry.address)));
  const asm = await ok(client, 'procedure_assembly', { procedure: caller });
  const lines = asm.split('\n');
  assert.match(lines[0], new RegExp('^' + caller + ': '));
  assert.ok(lines.some((l) => l.includes(`<${name}>`)), `a call to ${name} in ${caller}`);
  // The same instructions, a page at a time.
  const paged = [];
  for (let offset = 0; ; ) {
    const r = await ok(client, 'read_function_instructions', { procedure: caller, offset, limit: 7 });
    paged.push(...r.instructions.items);
    if (r.instructions.next_offset === null) { assert.equal(r.instructions.total, lines.length); break; }
    offset = r.instructions.next_offset;
  }
  assert.deepEqual(paged, lines);
  const outgoing = await ok(client, 'procedure_references', { procedure: caller });
  assert.ok(outgoing.references.items.some((e) => e.target_address === toHex(entry.address) && e.kind.call));
  const incoming = await ok(client, 'procedure_references', { procedure: name, direction: 'incoming', limit: 1 });
  assert.equal(incoming.references.returned, 1);
  assert.equal(incoming.references.total, entry.callers.size);
  const none = await ok(client, 'resolve_containing_procedure', { address: '0xffffffffff000000' });
  assert.deepEqual([none.found, none.reason], [false, 'outside_segments']);
  await refused(client, 'procedure_info', { procedure: 'no_such_procedure' }, /There is no procedure named "no_such_procedure"/);
});

test('procedure_pseudo_code answers null and says why', async () => {
  await ok(client, 'open_binary', { path: LS });
  const r = await call(client, 'procedure_pseudo_code', { procedure: 'entry' });
  assert.equal(r.error, false);
  assert.equal(r.structured.result, null);
  assert.match(r.text, /No decompiler runs in this server/);
  checked.add('procedure_pseudo_code');
});

test('analyze_function, get_call_graph and find_code_for_string on zlib\'s enough.c, built here with symbols', async () => {
  await ok(client, 'open_binary', { path: ENOUGH });
  const dossier = await ok(client, 'analyze_function', { procedure: 'main', include_assembly: true, limit: 3 });
  assert.equal(dossier.procedure.name, 'main');
  assert.ok(dossier.callees.items.length <= 3);
  assert.ok(dossier.basic_blocks.returned >= 1);
  assert.equal(dossier.assembly.returned, dossier.assembly.items.length);
  const more = await ok(client, 'analyze_function', { procedure: 'main', limit: 3, collection_offset: { callees: 3 } });
  if (dossier.callees.total > 3) assert.notDeepEqual(more.callees.items, dossier.callees.items);
  const main = await ok(client, 'procedure_address', { procedure: 'main' });
  const graph = await ok(client, 'get_call_graph', { address: main, depth: 2 });
  assert.deepEqual(Object.keys(graph).sort(), ['0', '1']);
  assert.equal(graph['0'][0].address, main);
  assert.deepEqual(new Set(graph['0'][0].calls), new Set(await ok(client, 'procedure_callees', { procedure: 'main' })));
  const back = await ok(client, 'get_call_graph', { address: graph['1'][0].address, direction: 'backward', depth: 1 });
  assert.ok(back['0'][0].calls.includes(main));
  const literal = sh('strings', ['-a', '-n', '10', ENOUGH]).split('\n').find((s) => s.startsWith('abort: '));
  const found = await ok(client, 'find_code_for_string', { query: literal ?? 'abort' });
  assert.ok(found.matches.length >= 1);
  for (const ref of found.references) assert.equal(ref.containing_procedure.found, true);
  assert.ok(found.operations_used <= found.operation_budget);
});

test('a PE image made by lld-link: its thunks, entry and bytes', async () => {
  const exe = path.join(FIXTURES, 'pe_sample.exe');
  const r = await ok(client, 'open_binary', { path: exe });
  assert.deepEqual([r.format, r.architecture, r.sha256], ['pe', 'x86_64', sha256(exe)]);
  const procedures = await everyPage(client, 'list_procedures', {}, 100);
  // llvm-readobj names the imports; each has a thunk procedure of its name.
  const imports = sh('llvm-readobj-14', ['--coff-imports', exe]).split('\n').map((l) => /^\s*Symbol: (\S+) \(\d+\)$/.exec(l)).filter(Boolean).map((m) => m[1]);
  assert.equal(imports.length, 4);
  for (const name of imports) {
    const p = procedures.find((x) => x.value === name);
    assert.ok(p, `a thunk named ${name}`);
    assert.equal(p.procedure.thunk, true);
  }
  const base = BigInt('0x' + /ImageBase: 0x([0-9A-Fa-f]+)/.exec(sh('llvm-readobj-14', ['--file-headers', exe]))[1]);
  const entry = BigInt('0x' + /AddressOfEntryPoint: 0x([0-9A-Fa-f]+)/.exec(sh('llvm-readobj-14', ['--file-headers', exe]))[1]);
  assert.equal(await ok(client, 'address_name', { address: toHex(base + entry) }), 'entry');
  const file = fs.readFileSync(exe);
  for (const s of sections(exe)) {
    if (s.size === 0) continue;
    const address = toHex(s.address);
    const where = await ok(client, 'address_to_file_offset', { address });
    assert.equal(where.file_offset, s.offset, s.name);
    const bytes = await ok(client, 'read_bytes', { address, length: 32 });
    assert.equal(bytes.bytes_hex, file.subarray(s.offset, s.offset + bytes.returned_bytes).toString('hex'), s.name);
  }
  const segments = await ok(client, 'list_segments');
  assert.ok(segments.some((g) => g.name === '.text' && g.executable));
  const wide = await ok(client, 'search_strings', { pattern: 'wide string for strings' });
  assert.equal(wide.total, 1);
  const listed = await ok(client, 'list_strings', { address: wide.items[0].address });
  assert.equal(listed.items[0].string.encoding, 'UTF-16LE');
});

test('every answer has an evidence record at its evidence_uri', async () => {
  await ok(client, 'open_binary', { path: ENOUGH });
  const r = await call(client, 'list_procedures', { limit: 2 });
  const link = r.content.find((c) => c.type === 'resource_link');
  assert.equal(link.uri, r.structured.evidence_uri);
  const read = await client.readResource({ uri: r.structured.evidence_uri });
  const record = JSON.parse(read.contents[0].text);
  assert.equal(record.evidence_id, r.structured.evidence_id);
  assert.equal(record.operation, 'list_procedures');
  assert.equal(record.subject.digest.sha256, sha256(ENOUGH));
  assert.deepEqual(record.normalized_result, r.structured.result);
  // The same question about the same bytes is the same evidence.
  assert.equal((await call(client, 'list_procedures', { limit: 2 })).structured.evidence_id, r.structured.evidence_id);
  // The plugin's sentence says why the record is not there.
  await assert.rejects(client.readResource({ uri: 'rea://evidence/ev_' + '0'.repeat(64) }),
    /Resource not found: rea:\/\/evidence\/ev_0+ is not held here: evidence records last as long as this server process/);
});

test('a malformed or truncated binary gets a clear error and the server keeps serving', async () => {
  const notElf = path.join(scratch, 'script.sh');
  fs.writeFileSync(notElf, '#!/bin/sh\necho hi\n');
  await refused(client, 'open_binary', { path: notElf }, /script\.sh is neither an ELF nor a PE file \(it starts with 23 21 2f 62\)/);
  const half = path.join(scratch, 'ls-half');
  const whole = fs.readFileSync(LS);
  fs.writeFileSync(half, whole.subarray(0, whole.length >> 1));
  await refused(client, 'open_binary', { path: half }, /ls-half is cut short: a loaded segment ends at byte \d+, past the end of the file/);
  const tail = path.join(scratch, 'ls-tail');
  fs.writeFileSync(tail, whole.subarray(0, whole.length - 64));
  await refused(client, 'open_binary', { path: tail }, /ls-tail is cut short: its section headers end at byte/);
  const garbage = path.join(scratch, 'garbage');
  fs.writeFileSync(garbage, Buffer.concat([Buffer.from('\x7fELF\x02\x01\x01'), crypto.randomBytes(4096)]));
  await refused(client, 'open_binary', { path: garbage }, /garbage/);
  await refused(client, 'open_binary', { path: path.join(scratch, 'missing') }, /There is no file at .*missing\./);
  await refused(client, 'open_binary', { path: scratch }, /is a folder, not a binary/);
  await refused(client, 'open_binary', { path: LS, provider_id: 'ghidra' }, /only analysis provider is toolhost-analysis/);
  // Still serving, and the bad files never became documents.
  const r = await ok(client, 'open_binary', { path: ENOUGH });
  assert.equal(r.sha256, sha256(ENOUGH));
  assert.ok(!(await ok(client, 'list_documents')).some((d) => /half|tail|garbage|script/.test(d)));
});

test('a large binary reports progress while it is analysed', async () => {
  const fresh = await connect();
  const progress = [];
  const r = await ok(fresh, 'open_binary', { path: '/usr/bin/gdb' }, { onprogress: (p) => progress.push(p) });
  assert.equal(r.sha256, sha256('/usr/bin/gdb'));
  assert.ok(progress.length >= 1, 'no progress notification while gdb was analysed');
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, 'progress only grows: ' + JSON.stringify(progress));
  for (const p of progress) {
    assert.match(p.message, /^analysis: /);
    if (p.total !== undefined) assert.ok(p.progress <= p.total);
  }
});

test('limits in the config: the largest file, the number of documents', async () => {
  const small = await connect('analysis-small');
  await refused(small, 'open_binary', { path: '/usr/bin/gdb' }, /gdb is .* MiB; this server opens files up to 1\.0 MiB \(the max_file_mb setting\)/);
  await ok(small, 'open_binary', { path: LS });
  await ok(small, 'open_binary', { path: ENOUGH });
  assert.deepEqual(await ok(small, 'list_documents'), ['enough']);
  await refused(small, 'list_segments', { document: 'ls' }, /No document is named "ls"; open are: enough\./);
});

test('a misspelt or out-of-range setting is refused by check-config with the line that wrote it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'analysis-settings-'));
  try {
    const base = fs.readFileSync(CONFIG, 'utf8').replace('{exe}/../plugins', path.join(path.dirname(TOOLHOST), '../plugins'));
    // The appended line's number, as check-config names it.
    const at = `toolhost\\.toml:${base.split('\n').length}:\\d+`;
    for (const [line, expected] of [
      ['max_documentz = 2', new RegExp(at + String.raw`: servers\.analysis-small\.settings\.analysis\.max_documentz: analysis has no such setting \(its settings: max_documents, threads, max_file_mb, evidence_mb, open\)`)],
      ['evidence_mb = 0', new RegExp(at + String.raw`: servers\.analysis-small\.settings\.analysis\.evidence_mb: .*1`)],
      ['open = "/usr/bin/ls"', /servers\.analysis-small\.settings\.analysis\.open: .*array/],
    ]) {
      const file = path.join(dir, 'toolhost.toml');
      fs.writeFileSync(file, base + line + '\n');
      const r = spawnSync(TOOLHOST, ['check-config', '--config', file], { encoding: 'utf8' });
      assert.notEqual(r.status, 0, `check-config accepted ${line}`);
      assert.match(r.stderr + r.stdout, expected, line);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// The two configurations plugins/analysis/README.md gives for serving this plugin as `eleven-rea`,
// read from the README itself, so the documented snippets are the ones that run.
function readmeSnippets() {
  const readme = fs.readFileSync(path.join(import.meta.dirname, '../../plugins/analysis/README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## As `eleven-rea`'), readme.indexOf('## Tools'));
  const blocks = [...section.matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 2, 'the README\'s eleven-rea section should show two TOML blocks');
  return blocks;
}

test('as eleven-rea, configured as the README says: the same tools under that name; behind rea-filter, its messages for REA\'s writes', async () => {
  const [asAnalysis, asUpstream] = readmeSnippets();
  const plugins = path.join(path.dirname(TOOLHOST), '..', 'plugins');
  const header = `plugin_dirs = [${JSON.stringify(plugins)}]\n`;
  // 1: the plugin serves eleven-rea itself.
  const direct = path.join(scratch, 'eleven-rea-direct.toml');
  fs.writeFileSync(direct, header + asAnalysis);
  // 2: eleven-rea stays on rea-filter (as in config/toolhost.toml) with the analysis server upstream.
  const proxied = path.join(scratch, 'eleven-rea-proxied.toml');
  const upstream = asUpstream.replace('/path/to/toolhost/build/bin/toolhost', TOOLHOST)
    .replace('/path/to/toolhost/config/toolhost.toml', proxied);
  fs.writeFileSync(proxied, `${header}[servers.analysis]\nplugins = ["analysis"]\n[servers.eleven-rea]\nplugins = ["rea-filter"]\n${upstream}`);
  for (const config of [direct, proxied]) {
    const checkConfig = execFileSync(TOOLHOST, ['check-config', '--config', config], { env: { PATH: process.env.PATH, HOME: scratch, ...isolationEnv() } });
    assert.match(String(checkConfig), /OK/);
  }
  const open = async (config) => {
    const transport = new StdioClientTransport({ command: TOOLHOST, args: ['--config', config, '--server', 'eleven-rea'],
      env: { PATH: process.env.PATH, HOME: scratch, ...isolationEnv() }, stderr: 'pipe' });
    const c = new Client({ name: 'analysis-test', version: '1.0.0' });
    await c.connect(transport);
    cleanups.push(() => c.close());
    return c;
  };
  const alone = await open(direct);
  assert.deepEqual((await alone.listTools()).tools.map((t) => t.name).sort(), [...TOOLS].sort());
  await ok(alone, 'open_binary', { path: ENOUGH });
  assert.equal((await ok(alone, 'list_procedures', { limit: 5 })).items.length, 5);
  await assert.rejects(alone.callTool({ name: 'set_comment', arguments: { address: '0x401000', comment: 'x' } }),
    /Unknown tool: set_comment/);
  const filtered = await open(proxied);
  assert.deepEqual((await filtered.listTools()).tools.map((t) => t.name).sort(), [...TOOLS].sort());
  await ok(filtered, 'open_binary', { path: ENOUGH });
  assert.equal((await ok(filtered, 'list_procedures', { limit: 5 })).items.length, 5);
  await refused(filtered, 'set_comment', { address: '0x401000', comment: 'x' }, /Use the `eleven` server's `add_comment` tool instead/);
});

test('every tool was checked against REA\'s shape', () => {
  assert.deepEqual([...checked].sort(), [...TOOLS].sort());
});
