// plugin.h's growth rule, seen from plugins built against another header: a struct one field
// shorter than the host's reads its missing field as the default, one field longer is accepted
// while its extra field is zero and refused with a sentence once it is set, a malformed entry
// gets its documented message.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { TOOLHOST, FIXTURES_CONFIG, connect } from "./harness.mjs";

const run = promisify(execFile);
const FIXTURE_DIR = process.env.FIXTURE_DIR;

const textOf = (result) => result.content.map((c) => c.text).join("");

test("toolhost plugins: shorter and longer structs load; a used extra field, a missing factory and a bad entry are refused", async () => {
  // Exits 0: the shorter entry has no deinit, and the host never calls the poisoned one beyond it.
  const { stdout } = await run(TOOLHOST, ["plugins", "--config", FIXTURES_CONFIG, "--json"]);
  const listed = JSON.parse(stdout);
  const byId = Object.fromEntries(listed.plugins.map((p) => [p.id || p.file.split("/").pop(), p]));
  assert.equal(byId["fixture-shorter"].status, "loaded");
  assert.ok(byId["fixture-shorter"].tools.includes("shorter_echo"));
  assert.equal(byId["fixture-longer"].status, "loaded");
  assert.ok(byId["fixture-longer"].tools.includes("longer_echo"));
  assert.equal(byId["fixture-longer-used"].status, "init failed");
  assert.equal(byId["fixture-shorter-transport"].status, "init failed");
  assert.equal(byId["fixture-bad-entry.so"].status, "bad entry");
  const problems = listed.problems.join("\n");
  assert.match(problems, /plugin 'fixture-longer-used' \(.*\): toolhost_tool_desc_t sets a field this toolhost does not know \(byte \d+ of \d+; this toolhost's toolhost_tool_desc_t has \d+\): the plugin needs a newer toolhost, or must leave that field zero/);
  assert.match(problems, /plugin 'fixture-shorter-transport' \(.*\): a transport needs a kind, a name and a factory/);
  assert.ok(
    problems.includes(`${FIXTURE_DIR}/fixture-bad-entry.so has a malformed toolhost_plugin_entry (id 'not a valid id!' is not 1 to 64 letters, digits, '_', '-' or '.'); rebuild it with TOOLHOST_PLUGIN(...) or fix the entry as plugin.h describes`),
    problems,
  );
});

test("a shorter struct's missing field reads as its default; a longer struct's zero field changes nothing", async () => {
  // The shorter provider's poisoned instructions_wait_ms would hold initialize forever.
  const { client } = await connect({ config: FIXTURES_CONFIG, server: "growth" });
  after(() => client.close().catch(() => {}));
  const instructions = client.getInstructions() ?? "";
  assert.match(instructions, /instructions of fixture-shorter/);
  assert.match(instructions, /instructions of fixture-longer/);

  // page_size = 1 in this config: one tool per page.
  const names = [];
  for (let page = await client.listTools(); ; page = await client.listTools({ cursor: page.nextCursor })) {
    names.push(...page.tools.map((t) => t.name));
    if (!page.nextCursor) break;
  }
  assert.deepEqual(names.sort(), ["longer_echo", "longer_provided", "shorter_echo", "shorter_provided"]);

  // The shorter permission kind lacks default_value (poisoned with "never"): allow, the default.
  const shorter = await client.callTool({ name: "shorter_echo", arguments: {} });
  assert.equal(shorter.isError, undefined, textOf(shorter));
  assert.equal(textOf(shorter), "user_data is NULL");
  const longer = await client.callTool({ name: "longer_echo", arguments: {} });
  assert.equal(textOf(longer), "user_data arrived");

  const read = async (uri) => (await client.readResource({ uri })).contents[0].text;
  assert.equal(await read("fixture://fixture-shorter/resource"), "user_data is NULL");
  assert.equal(await read("fixture://fixture-longer/resource"), "user_data arrived");
  const prompt = async (name) => (await client.getPrompt({ name })).messages[0].content.text;
  assert.equal(await prompt("shorter_prompt"), "user_data is NULL");
  assert.equal(await prompt("longer_prompt"), "user_data arrived");
});
