// A test upstream MCP server for rea-filter, built on the official TypeScript SDK server.
//
//   node upstream.mjs rea     tools with REA's published names, arguments and result envelope
//                             (reference: REA's generated tool catalog), writes included
//   node upstream.mjs probe   tools that show what a proxy passes on: cancellation, list
//                             changes, progress, elicitation, logging
//
// Every call is appended as a JSON line to the file named by UPSTREAM_LOG (when set), so a test
// can prove what reached the upstream and what did not.
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const mode = process.argv[2] ?? "probe";
const logFile = process.env.UPSTREAM_LOG;
const record = (entry) => { if (logFile) appendFileSync(logFile, JSON.stringify(entry) + "\n"); };

const obj = (properties = {}, required = []) => ({ type: "object", properties, required });
const str = (description) => ({ type: "string", description });
const int = (description) => ({ type: "integer", description });
const page = { offset: int("First item"), limit: int("Items per page (default 100, max 500)") };
// Every native REA tool also takes these two.
const native = (properties = {}, required = []) =>
  obj({ ...properties, document: str("Document name"), unknown_registry_approved: { type: "boolean" } }, required);

// name -> input schema, as REA's catalog publishes them (the native core, some enhanced and
// session tools). REA marks nearly every tool readOnlyHint:false; binary_session is one of
// the four with readOnlyHint:true.
const reaTools = {
  list_documents: obj(),
  current_document: obj(),
  set_current_document: obj({ document: str("Document to make current") }, ["document"]),
  list_segments: native(),
  list_procedures: native(page),
  list_names: native({ address: str("Address"), ...page }),
  list_strings: native({ address: str("Address"), ...page }),
  search_procedures: native({ pattern: str("Pattern"), mode: { enum: ["literal", "regex"] }, case_sensitive: { type: "boolean" }, ...page }, ["pattern"]),
  search_strings: native({ pattern: str("Pattern"), mode: { enum: ["literal", "regex"] }, case_sensitive: { type: "boolean" }, ...page }, ["pattern"]),
  procedure_address: native({ procedure: str("Procedure") }, ["procedure"]),
  procedure_info: native({ procedure: str("Procedure") }, ["procedure"]),
  procedure_assembly: native({ procedure: str("Procedure") }, ["procedure"]),
  procedure_pseudo_code: native({ procedure: str("Procedure") }, ["procedure"]),
  read_function_instructions: native({ procedure: str("Procedure"), ...page }, ["procedure"]),
  procedure_callers: native({ procedure: str("Procedure") }, ["procedure"]),
  procedure_callees: native({ procedure: str("Procedure") }, ["procedure"]),
  procedure_references: native({ procedure: str("Procedure"), direction: { enum: ["outgoing", "incoming"] }, max_instructions: int("Cap"), ...page }, ["procedure"]),
  resolve_containing_procedure: native({ address: str("Address") }, ["address"]),
  xrefs: native({ address: str("Address (defaults to the cursor)") }),
  address_name: native({ address: str("Address") }),
  comment: native({ address: str("Address") }),
  inline_comment: native({ address: str("Address") }),
  list_bookmarks: native(),
  current_address: native(),
  current_procedure: native(),
  goto_address: native({ address: str("Address") }, ["address"]),
  next_address: native({ address: str("Address") }),
  prev_address: native({ address: str("Address") }),
  read_bytes: native({ address: str("Address"), length: int("Bytes (default 256, max 4096)") }, ["address"]),
  address_to_file_offset: native({ address: str("Address") }, ["address"]),
  set_address_name: native({ address: str("Address"), name: str("New name") }, ["address", "name"]),
  set_addresses_names: native({ names: { type: "object", additionalProperties: { type: "string" } } }, ["names"]),
  set_comment: native({ address: str("Address"), comment: str("Comment") }, ["address", "comment"]),
  set_inline_comment: native({ address: str("Address"), comment: str("Comment") }, ["address", "comment"]),
  set_bookmark: native({ address: str("Address"), name: str("Name") }, ["address"]),
  unset_bookmark: native({ address: str("Address") }, ["address"]),
  binary_overview: obj({ detail: { enum: ["concise", "detailed"] }, limit: int("Max 50") }),
  analyze_function: obj({ procedure: str("Procedure"), include_assembly: { type: "boolean" } }, ["procedure"]),
  batch_decompile: obj({ addresses: { type: "array", items: { type: "string" }, maxItems: 20 } }, ["addresses"]),
  get_call_graph: obj({ address: str("Address"), direction: { enum: ["forward", "backward"] }, depth: int("Max 5") }, ["address"]),
  find_xrefs_to_name: obj({ name: str("Name") }, ["name"]),
  inspect_native_api: obj({ procedure: str("Procedure") }, ["procedure"]),
  open_binary: obj({ path: str("Path"), provider_id: str("Provider"), snapshot_path: str("Snapshot") }, ["path"]),
  close_binary: obj({ snapshot_path: str("Snapshot"), overwrite: { type: "boolean" } }),
  binary_session: obj({ detail: str("Detail") }),
  compare_functions: obj({ left: str("Left"), right: str("Right") }, ["left", "right"]),
  export_evidence_bundle: obj({ path: str("Path") }, ["path"]),
};
const reaReadOnly = new Set(["binary_session"]);

function reaResult(name, args) {
  const result = { tool: name, arguments: args };
  const evidence_id = "ev_" + "0".repeat(64);
  const structured = { result, evidence_id, evidence_uri: `rea://evidence/${evidence_id}` };
  return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
}

const server = new Server({ name: `rea-filter-test-${mode}`, version: "1.0.0" }, {
  capabilities: { tools: { listChanged: true }, logging: {} },
  instructions: `Test upstream in ${mode} mode. These instructions come from the upstream.`,
});

const added = [];
const probeTools = () => [
  { name: "echo", description: "Echoes `text`.", inputSchema: obj({ text: str("Text") }, ["text"]), annotations: { readOnlyHint: true } },
  { name: "wait_for_cancel", description: "Waits until cancelled (or `ms` pass) and records the cancellation.", inputSchema: obj({ ms: int("Give up after") }) },
  { name: "add_tool", description: "Adds a tool and announces notifications/tools/list_changed.", inputSchema: obj() },
  { name: "progress", description: "Reports `steps` progress notifications with messages.", inputSchema: obj({ steps: int("Steps") }) },
  { name: "ask", description: "Asks the user through elicitation/create and returns the answer.", inputSchema: obj() },
  { name: "log", description: "Sends a notifications/message at level warning.", inputSchema: obj({ text: str("Text") }, ["text"]) },
  { name: "exit", description: "Exits the upstream process at once (status 3).", inputSchema: obj() },
  ...added.map((name) => ({ name, description: "Added at run time.", inputSchema: obj() })),
];

server.setRequestHandler(ListToolsRequestSchema, async () => {
  if (mode === "rea") {
    return { tools: Object.entries(reaTools).map(([name, inputSchema]) => ({
      name, description: `REA ${name}.`, inputSchema,
      annotations: { readOnlyHint: reaReadOnly.has(name) },
    })) };
  }
  return { tools: probeTools() };
});

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
});

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const { name, arguments: args = {} } = request.params;
  record({ call: name, arguments: args, meta: request.params._meta ?? null });
  if (mode === "rea") {
    if (!(name in reaTools)) return { content: [{ type: "text", text: `Unknown tool ${name}` }], isError: true };
    return reaResult(name, args);
  }
  const token = request.params._meta?.progressToken;
  switch (name) {
    case "echo":
      return { content: [{ type: "text", text: `echo: ${args.text}` }] };
    case "wait_for_cancel": {
      await sleep(args.ms ?? 30000, extra.signal);
      if (extra.signal.aborted) {
        record({ cancelled: extra.requestId, reason: String(extra.signal.reason ?? "") });
      }
      return { content: [{ type: "text", text: extra.signal.aborted ? "cancelled" : "not cancelled" }] };
    }
    case "add_tool": {
      const added_name = `added_${added.length + 1}`;
      added.push(added_name);
      await server.sendToolListChanged();
      return { content: [{ type: "text", text: added_name }] };
    }
    case "progress": {
      const steps = args.steps ?? 3;
      for (let i = 1; i <= steps; i++) {
        if (token !== undefined) {
          await extra.sendNotification({ method: "notifications/progress",
            params: { progressToken: token, progress: i, total: steps, message: `step ${i} of ${steps}` } });
        }
        await sleep(20);
      }
      return { content: [{ type: "text", text: `done ${steps}` }] };
    }
    case "ask": {
      const answer = await extra.sendRequest({ method: "elicitation/create", params: {
        message: "Which colour?", requestedSchema: obj({ colour: str("Colour") }, ["colour"]) } },
        (await import("@modelcontextprotocol/sdk/types.js")).ElicitResultSchema);
      return { content: [{ type: "text", text: JSON.stringify(answer) }] };
    }
    case "log":
      await server.sendLoggingMessage({ level: "warning", logger: "probe", data: args.text });
      return { content: [{ type: "text", text: "logged" }] };
    case "exit":
      process.exit(3);
    default:
      if (added.includes(name)) return { content: [{ type: "text", text: `${name} ran` }] };
      return { content: [{ type: "text", text: `Unknown tool ${name}` }], isError: true };
  }
});

await server.connect(new StdioServerTransport());
