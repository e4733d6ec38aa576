// Every loader fault produces its documented message in `toolhost plugins`, and the host still
// serves the good plugins next to the broken ones.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { TOOLHOST, FIXTURES_CONFIG, EXAMPLE_CONFIG, connect } from "./harness.mjs";

const run = promisify(execFile);
const FIXTURE_DIR = process.env.FIXTURE_DIR;

test("toolhost plugins prints one row per file and one sentence per problem", async () => {
  const { stdout } = await run(TOOLHOST, ["plugins", "--config", FIXTURES_CONFIG]);
  const rows = Object.fromEntries(
    stdout.split("\n").slice(1).filter((l) => l && !l.startsWith(" ") && !l.startsWith("Problems")).map((l) => [l.split(/\s+/)[0], l]),
  );
  assert.match(stdout, /^PLUGIN\s+VERSION\s+ABI\s+TOOLS\s+PERMISSION KINDS\s+TRANSPORTS\s+STATUS/);
  assert.match(rows["example"], /^example\s+1\.0\.0\s+1\.0\s+count\s+example\.count\s+-\s+loaded$/);
  assert.match(rows["fixture-good"], /fixture_echo\s+fixture\.echo\s+-\s+loaded$/);
  assert.match(rows["not-a-plugin.so"], /not a shared library$/);
  assert.match(rows["fixture-no-entry.so"], /no entry symbol$/);
  assert.match(rows["fixture-missing-symbol.so"], /missing symbol$/);
  assert.match(rows["fixture-abi-major.so"], /2\.0 .*wrong ABI$/);
  assert.match(rows["fixture-abi-minor.so"], /1\.99 .*wrong ABI$/);
  assert.match(rows["fixture-init-fails"], /init failed$/);
  assert.match(rows["fixture-init-throws"], /init failed$/);
  assert.match(rows["fixture-init-crashes"], /init crashed$/);
  assert.match(rows["fixture-duplicate-tool"], /duplicate name$/);

  const problems = stdout.slice(stdout.indexOf("Problems:"));
  const expect = [
    `${FIXTURE_DIR}/not-a-plugin.so could not be loaded as a shared library`,
    `${FIXTURE_DIR}/fixture-no-entry.so exports no toolhost_plugin_entry symbol, so it is not a toolhost plugin`,
    `${FIXTURE_DIR}/fixture-missing-symbol.so needs the symbol fixture_symbol_nobody_defines, which neither toolhost nor the libraries the plugin links provide`,
    `${FIXTURE_DIR}/fixture-abi-major.so was built for toolhost plugin ABI 2.0 but this toolhost speaks ABI 1.0; rebuild the plugin against this toolhost's SDK`,
    `${FIXTURE_DIR}/fixture-abi-minor.so needs toolhost plugin ABI 1.99 but this toolhost provides 1.0; update toolhost or rebuild the plugin against the older SDK`,
    "failed to start for server '(all plugins)': the fixture refuses to start: setting 'needed' is missing",
    "threw from init (fixture init exploded)",
    "crashed in init with SIGSEGV",
    "tool 'count' of plugin 'fixture-duplicate-tool' is already registered by plugin 'example'",
  ];
  for (const e of expect) assert.ok(problems.includes(e), `missing: ${e}\n${problems}`);
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
