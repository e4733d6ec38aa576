// debug_target.h grows by minors: the debugger attaches to a backend built against 1.0 (a
// shorter factory and session table, with poison where later functions would be), and reads a
// stop written one field shorter or one field longer than its own by what struct_size says.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "./harness.mjs";

const config = process.env.DT_FIXTURES_CONFIG;
const textOf = (result) => result.content.map((c) => c.text).join("");

const clients = [];
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
});

async function attach(server) {
  const session = await connect({ config, server });
  clients.push(session.client);
  const opened = await session.client.callTool({ name: "open", arguments: { backend: "dump", connect: "fixture" } });
  return { ...session, opened };
}

test("a backend built for debug-target 1.0 attaches and runs", async () => {
  const { client, opened, stderr } = await attach("dt-10");
  assert.equal(opened.isError, undefined, textOf(opened));
  assert.match(textOf(opened), /Connected to dump at fixture/);
  assert.match(textOf(opened), /fixture stop with its description/);
  // `g` would hand a pending signal to resume_with_signal; a 1.0 table has none, so it resumes.
  const go = await client.callTool({ name: "command", arguments: { line: "g" } });
  assert.equal(go.isError, undefined, textOf(go));
  assert.match(textOf(go), /fixture stop with its description/);
  assert.match(textOf(go), /\[target halted @ 0 00000000`00401000/);
  assert.doesNotMatch(stderr(), /poison/);
});

test("a stop one field shorter has no description; the rest of it is read", async () => {
  const { client, opened } = await attach("dt-stop-shorter");
  assert.equal(opened.isError, undefined, textOf(opened));
  assert.doesNotMatch(textOf(opened), /fixture stop/);
  const go = await client.callTool({ name: "command", arguments: { line: "g" } });
  assert.match(textOf(go), /\[target halted @ 0 00000000`00401000/);
});

test("a stop one field longer is written only as far as the debugger's struct", async () => {
  const { client, opened } = await attach("dt-stop-longer");
  assert.equal(opened.isError, undefined, textOf(opened));
  assert.match(textOf(opened), /fixture stop with its description/);
  const go = await client.callTool({ name: "command", arguments: { line: "g" } });
  assert.match(textOf(go), /fixture stop with its description/);
});
