// Runs the official conformance suite (0.2.0-alpha.12, pinned in tests/package.json) with every
// suite, the not-yet-scored scenarios too, against toolhost over HTTP, for the spec revision
// CONFORMANCE_SPEC names. Every scenario must pass with no failed check, in both eras:
// - 2025-11-25 (the initialize era): at least 33 scenarios, the ones the issues name among them.
// - 2026-07-28 (the stateless era): at least 40 scenarios, the ones listed in REQUIRED_2026 among
//   them (so that a scenario the suite stops running is noticed, not silently passed).
import { test } from "node:test";
import assert from "node:assert/strict";
import { run } from "./run_suite.mjs";
import { startHttp, stop } from "../http/http_server.mjs";

const SPEC = process.env.CONFORMANCE_SPEC ?? "2025-11-25";

// 2025-11-25: scenarios the issues name explicitly; they must be in the run, not merely absent
// from the failures.
const REQUIRED_2025 = [
  "server-initialize", "tools-call-with-progress", "tools-call-sampling", "tools-call-elicitation",
  "elicitation-sep1034-defaults", "elicitation-sep1330-enums", "server-sse-multiple-streams",
  "resources-subscribe", "completion-complete", "dns-rebinding-protection",
  "server-session-lifecycle", "json-schema-2020-12",
];

// 2026-07-28: every scenario of the suite's 40 for this revision, by name.
const REQUIRED_2026 = [
  "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
  "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
  "tools-call-with-progress", "json-schema-2020-12", "server-sse-multiple-streams", "resources-list",
  "resources-read-text", "resources-read-binary", "resources-templates-read", "sep-2164-resource-not-found",
  "prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
  "prompts-get-with-image", "dns-rebinding-protection", "caching", "http-header-validation",
  "input-required-result-missing-input-response", "input-required-result-unsupported-methods",
  "input-required-result-ignore-extra-params", "input-required-result-validate-input",
  "input-required-result-basic-elicitation", "input-required-result-basic-sampling",
  "input-required-result-basic-list-roots", "input-required-result-request-state",
  "input-required-result-multiple-input-requests", "input-required-result-multi-round",
  "input-required-result-result-type", "input-required-result-tampered-state",
  "input-required-result-capability-check", "input-required-result-non-tool-request",
  "http-custom-header-server-validation",
];

const passed = (lines, name) => lines.some((l) => l.startsWith(`✓ ${name}:`) && / 0 failed$/.test(l));

test(`the official conformance suite, spec ${SPEC}, --suite all`, async () => {
  const server = await startHttp(["--server", "conformance"]);
  try {
    const { code, out } = await run(process.env.NODE_BIN,
      [process.env.CONFORMANCE_CLI, "server", "--url", server.url, "--spec-version", SPEC, "--suite", "all"], 180000);
    const summary = out.slice(out.indexOf("=== SUMMARY ==="));
    console.log(summary);
    const lines = summary.split("\n").filter((l) => /^[✓✗] /.test(l));
    const [minimum, required] = SPEC === "2025-11-25" ? [33, REQUIRED_2025] : [40, REQUIRED_2026];
    assert.ok(lines.length >= minimum, `expected at least ${minimum} scenarios, got ${lines.length}:\n${out.slice(-3000)}`);
    const failed = lines.filter((l) => l.startsWith("✗") || !/ 0 failed$/.test(l));
    assert.deepEqual(failed, [], `failing scenarios:\n${out.slice(-8000)}`);
    for (const name of required) assert.ok(passed(lines, name), `scenario ${name} did not run or did not pass`);
    assert.match(summary, /Total: \d+ passed, 0 failed/);
    assert.equal(code, 0, `the suite exited with ${code}`);
  } finally {
    await stop(server);
  }
});
