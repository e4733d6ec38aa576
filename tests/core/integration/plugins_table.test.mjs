// Every loader fault produces its documented message in `toolhost plugins`, and the host still
// serves the good plugins next to the broken ones.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { TOOLHOST, FIXTURES_CONFIG, EXAMPLE_CONFIG, connect } from "./harness.mjs";

// The table's rows are asserted as they are in process (ISOLATION none): the isolated pass of the
// suite (TOOLHOST_ISOLATION=process) must not change what this test checks. isolation.test.mjs
// checks the same listing isolated.
const execFileP = promisify(execFile);
const run = (file, args) => execFileP(file, args, { env: { ...process.env, TOOLHOST_ISOLATION: "none" } });
const FIXTURE_DIR = process.env.FIXTURE_DIR;

test("toolhost plugins prints one row per file and one sentence per problem", async () => {
  const { stdout } = await run(TOOLHOST, ["plugins", "--config", FIXTURES_CONFIG]);
  assert.match(stdout, /^PLUGIN\s+VERSION\s+ABI\s+STATUS\s+ISOLATION\s+TOOLS\s+TRANSPORTS\n/);
  // A table a terminal shows without wrapping; the long sentences come below it.
  const table = stdout.slice(0, stdout.indexOf("\n\n"));
  for (const line of table.split("\n")) assert.ok(line.length <= 120, `row too wide (${line.length}): ${line}`);
  const rows = Object.fromEntries(table.split("\n").slice(1).map((l) => [l.split(/\s+/)[0], l]));
  assert.match(rows["example"], /^example\s+1\.0\.0\s+1\.0\s+loaded\s+none\s+1\s+-$/);
  assert.match(rows["fixture-good"], /^fixture-good\s+0\.0\.1\s+1\.0\s+loaded\s+none\s+1\s+-$/);
  assert.match(rows["not-a-plugin.so"], /\snot a shared library\s/);
  assert.match(rows["fixture-no-entry.so"], /\sno entry symbol\s/);
  assert.match(rows["fixture-missing-symbol.so"], /\smissing symbol\s/);
  assert.match(rows["fixture-abi-major.so"], /\s2\.0\s+wrong ABI\s/);
  assert.match(rows["fixture-abi-minor.so"], /\s1\.99\s+wrong ABI\s/);
  assert.match(rows["fixture-init-fails"], /\sinit failed\s/);
  assert.match(rows["fixture-init-throws"], /\sinit failed\s/);
  assert.match(rows["fixture-init-crashes"], /\sinit crashed\s/);
  assert.match(rows["fixture-duplicate-tool"], /\sduplicate name\s/);
  assert.match(stdout, /\nPERMISSION KIND\s+DEFAULT\s+PLUGIN\s+LABEL\nexample\.count\s+allow\s+example\s+Count numbers\n/);

  const problems = stdout.slice(stdout.indexOf("Problems:"));
  const expect = [
    `${FIXTURE_DIR}/not-a-plugin.so could not be loaded as a shared library`,
    `${FIXTURE_DIR}/fixture-no-entry.so exports no toolhost_plugin_entry symbol, so it is not a toolhost plugin`,
    `${FIXTURE_DIR}/fixture-missing-symbol.so needs the symbol fixture_symbol_nobody_defines, which neither toolhost nor the libraries the plugin links provide`,
    `${FIXTURE_DIR}/fixture-abi-major.so was built for toolhost plugin ABI 2.0 but this toolhost speaks ABI 1.1; rebuild the plugin against this toolhost's SDK`,
    `${FIXTURE_DIR}/fixture-abi-minor.so needs toolhost plugin ABI 1.99 but this toolhost provides 1.1; update toolhost or rebuild the plugin against the older SDK`,
    "failed to start for server '(all plugins)': the fixture refuses to start: setting 'needed' is missing",
    "threw from init (fixture init exploded)",
    "crashed in init with SIGSEGV",
    "tool 'count' of plugin 'fixture-duplicate-tool' is already registered by plugin 'example'",
  ];
  for (const e of expect) assert.ok(problems.includes(e), `missing: ${e}\n${problems}`);
});

test("toolhost plugins --json says the same, and --server keeps to that server's plugins", async () => {
  const all = JSON.parse((await run(TOOLHOST, ["plugins", "--config", FIXTURES_CONFIG, "--json"])).stdout);
  const byId = Object.fromEntries(all.plugins.filter((p) => p.id).map((p) => [p.id, p]));
  assert.deepEqual(byId["example"].tools, ["count"]);
  assert.deepEqual(byId["example"].permissionKinds, [{ id: "example.count", label: "Count numbers", default: "allow" }]);
  assert.equal(byId["fixture-init-crashes"].status, "init crashed");
  assert.match(byId["fixture-init-crashes"].problem, /crashed in init with SIGSEGV/);
  assert.ok(all.plugins.some((p) => p.file.endsWith("/not-a-plugin.so") && p.status === "not a shared library"));

  // example.toml's server "example" serves one plugin, though its folders hold the fixtures too.
  const one = JSON.parse((await run(TOOLHOST, ["plugins", "--config", EXAMPLE_CONFIG, "--server", "example", "--json"])).stdout);
  assert.deepEqual(one.plugins.map((p) => p.id), ["example"]);
  assert.deepEqual(one.problems, []);
  const table = (await run(TOOLHOST, ["plugins", "--config", EXAMPLE_CONFIG, "--server", "example"])).stdout;
  assert.doesNotMatch(table, /fixture/);
  await assert.rejects(run(TOOLHOST, ["plugins", "--config", EXAMPLE_CONFIG, "--server", "exmaple"]), (e) => {
    assert.equal(e.code, 2);
    assert.match(e.stderr, /^toolhost: no server named 'exmaple' in .*example\.toml; did you mean 'example'\?/);
    return true;
  });
});

test("toolhost tools --server NAME lists what an agent gets, with each tool's permission", async () => {
  const { stdout } = await run(TOOLHOST, ["tools", "--config", EXAMPLE_CONFIG, "--server", "example-never"]);
  assert.match(stdout, /^TOOL\s+PLUGIN\s+PERMISSION\s+DESCRIPTION\ncount\s+example\s+example\.count \(never\)\s+Counts from 1 up to `to`/);
  const json = JSON.parse((await run(TOOLHOST, ["tools", "--config", EXAMPLE_CONFIG, "--server", "example", "--json"])).stdout);
  assert.equal(json.server, "example");
  assert.deepEqual(json.tools.map((t) => [t.name, t.plugin, t.permissionKind, t.permission]), [["count", "example", "example.count", "allow"]]);
  assert.equal(json.tools[0].tool.name, "count");
  assert.equal(json.tools[0].tool.inputSchema.type, "object");
});

test("the good plugins are served next to the broken ones, page by page", async () => {
  const { client } = await connect({ config: FIXTURES_CONFIG, server: "fixtures" });
  const names = [];
  let cursor;
  let pages = 0;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  assert.deepEqual(names, ["fixture_echo", "count"]);
  assert.equal(pages, 2, "page_size = 1 gives one tool per page");
  // The fixture prints to stdout in init and in every call; the protocol stream stays clean.
  const res = await client.callTool({ name: "fixture_echo", arguments: { text: "hi" } });
  assert.deepEqual(res.structuredContent, { args: { text: "hi" } });
  await client.close();
});

test("check-config reports the broken plugins and fails; a clean config passes", async () => {
  await assert.rejects(run(TOOLHOST, ["check-config", "--config", FIXTURES_CONFIG]), (e) => {
    assert.equal(e.code, 1);
    assert.match(e.stdout, /crashed in init with SIGSEGV/);
    assert.match(e.stdout, /problems/);
    return true;
  });
  const { stdout } = await run(TOOLHOST, ["check-config", "--config", EXAMPLE_CONFIG]);
  assert.match(stdout, /: OK \(/);
});
