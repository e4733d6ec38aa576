// The debugger plugin: ntoseye's MCP tool surface (command, open, close, output) over any
// debug-target backend another plugin of the server registered.
#include <memory>
#include <string>

#include <toolhost/sdk/sdk.hpp>
#include "tools.hpp"

namespace {

namespace sdk = toolhost::sdk;
using toolhost::debugger::debugger_tools;

constexpr const char* kCommandSchema = R"json({
  "type": "object",
  "properties": {
    "line": {"type": "string", "description": "One REPL line in WinDbg syntax; ';' separates commands; empty only waits for a stop. `help` lists every command."},
    "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 300000, "description": "How long resuming and halted-only commands may wait for a stop (0 or absent: 10000; at most 300000)"},
    "format": {"type": "string", "enum": ["text", "json"], "description": "text (default) or json: {ok, output, result, target, debug_output} as structured content"}
  },
  "required": ["line"],
  "additionalProperties": false
})json";

constexpr const char* kOpenSchema = R"json({
  "type": "object",
  "properties": {
    "backend": {"type": "string", "enum": ["kd", "kdnet", "gdb", "memory", "dump"], "description": "How the target is reached"},
    "connect": {"type": "string", "description": "kd: the serial socket path (default /tmp/ntoseye-kd.sock); kdnet: listen address (default 0.0.0.0:50000); gdb: host:port of the stub (default 127.0.0.1:1234); memory: the VM process; dump: the file path"},
    "key": {"type": "string", "description": "kdnet only: the key, e.g. 1.2.3.4"}
  },
  "required": ["backend"],
  "additionalProperties": false
})json";

constexpr const char* kOutputSchema = R"json({
  "type": "object",
  "properties": {
    "id": {"type": "integer", "minimum": 1, "description": "The output number from a result's footer"},
    "offset": {"type": "integer", "minimum": 0, "description": "First line to show (default 0)"},
    "limit": {"type": "integer", "minimum": 0, "description": "Most lines to show (default: one page)"},
    "filter": {"type": "string", "description": "Show only the lines containing this text (case-insensitive)"}
  },
  "required": ["id"],
  "additionalProperties": false
})json";

std::string setting(const sdk::plugin& plugin, const char* name) {
  return std::string(sdk::string_member(plugin.settings(), name).value_or(""));
}

// What [servers.NAME.settings.debugger] may hold: a target to attach to when the server starts,
// and where symbols come from.
constexpr const char* kSettingsSchema = R"json({"type": "object", "properties": {
    "backend": {"type": "string", "description": "The backend to attach with at start: kd, kdnet, gdb, memory or dump"},
    "connect": {"type": "string", "description": "Where that backend connects (its `open` connect argument)"},
    "key": {"type": "string", "description": "The KDNET key, for backend = \"kdnet\""},
    "symbol_path": {"type": "string", "description": "The symbol path, as WinDbg's _NT_SYMBOL_PATH"},
    "symbol_timeout_ms": {"type": "integer", "minimum": 100, "maximum": 600000, "description": "The longest one symbol download may take"}
}})json";

absl::Status init(sdk::plugin& plugin) {
  if (auto s = plugin.declare_settings(kSettingsSchema); !s.ok()) return s;
  toolhost::debugger::launch_settings launch{setting(plugin, "backend"), setting(plugin, "connect"),
                                             setting(plugin, "key"), setting(plugin, "symbol_path")};
  if (auto path = toolhost::symbols::symbol_path::parse(launch.symbol_path); !path.ok()) {
    return absl::InvalidArgumentError("debugger setting symbol_path: " + std::string(path.status().message()));
  }
  if (const auto* t = sdk::member(plugin.settings(), "symbol_timeout_ms")) {
    if (!t->IsInt64() || t->GetInt64() < 100 || t->GetInt64() > 600000) {
      return absl::InvalidArgumentError(
          "debugger setting symbol_timeout_ms: a number of milliseconds from 100 to 600000");
    }
    launch.symbol_timeout_ms = t->GetInt64();
  }
  // Backends register after us, so they are looked up when a session opens.
  const sdk::plugin* self = &plugin;
  auto& tools = plugin.keep(std::make_shared<debugger_tools>(
      [self](const std::string& name) {
        return static_cast<const toolhost_debug_target_factory_t*>(
            self->find_transport(TOOLHOST_DEBUG_TARGET_KIND, name));
      },
      launch));
  plugin.on_deinit([&tools] { (void)tools.close(); });

  if (auto s = plugin.permission_kind("debugger.command", "Run debugger commands on the attached target",
                                      TOOLHOST_PERMISSION_ALLOW);
      !s.ok()) {
    return s;
  }
  if (auto s = plugin.permission_kind("debugger.attach", "Attach the debugger to a target or release it",
                                      TOOLHOST_PERMISSION_ALLOW);
      !s.ok()) {
    return s;
  }
  if (auto s = plugin.permission_kind("debugger.output", "Read stored debugger output", TOOLHOST_PERMISSION_ALLOW);
      !s.ok()) {
    return s;
  }
  if (auto s = plugin.instructions(toolhost::debugger::kInstructions); !s.ok()) return s;

  if (auto s = plugin.tool("command")
                   .title("Debugger command")
                   .description("Run one REPL line in WinDbg syntax (`k`, `bp module!symbol`, `dq rsp l8`, `u rip`, "
                                "`lm`, `g`, `p`, `break`, ...; `;` separates commands; `help` lists them) and return "
                                "its text followed by a one-line `[target ...]` trailer. Never blocks longer than "
                                "timeout_ms (default 10 s, at most 5 min).")
                   .input_schema(kCommandSchema)
                   .annotations(R"({"readOnlyHint":false,"destructiveHint":true,"openWorldHint":false})")
                   .permission("debugger.command")
                   .tasks()  // `g` with a long timeout_ms may run for minutes
                   .handler([&tools](const sdk::args& a, sdk::call& call) {
                     return tools.command(
                         a.string("line"), a.integer("timeout_ms", 0), a.string("format", "text"),
                         [&call] { return call.cancelled(); },
                         [&call](double done, double total, const std::string& message) {
                           call.progress(done, total, message);
                         });
                   });
      !s.ok()) {
    return s;
  }
  if (auto s = plugin.tool("open")
                   .title("Attach to a target")
                   .description("Attach to a target: backend kd | kdnet | gdb | memory | dump, plus connect and, for "
                                "kdnet, key. One session at a time.")
                   .input_schema(kOpenSchema)
                   .annotations(R"({"readOnlyHint":false,"destructiveHint":false,"openWorldHint":false})")
                   .permission("debugger.attach")
                   .concurrent()
                   .handler([&tools](const sdk::args& a, sdk::call&) {
                     return tools.open(a.string("backend"), a.string("connect"), a.string("key"));
                   });
      !s.ok()) {
    return s;
  }
  if (auto s = plugin.tool("close")
                   .title("Release the target")
                   .description("Release the target: removes breakpoints and lets it run on.")
                   .input_schema(R"({"type":"object","properties":{},"additionalProperties":false})")
                   .annotations(
                       R"({"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false})")
                   .permission("debugger.attach")
                   .concurrent()
                   .handler([&tools](const sdk::args&, sdk::call&) { return tools.close(); });
      !s.ok()) {
    return s;
  }
  return plugin.tool("output")
      .title("Read stored output")
      .description(
          "Page a long command result: lines from an offset, or the lines matching a filter "
          "(case-insensitive). Each line is prefixed with its offset. Needs no session.")
      .input_schema(kOutputSchema)
      .annotations(R"({"readOnlyHint":true,"openWorldHint":false})")
      .permission("debugger.output")
      .concurrent()
      .handler([&tools](const sdk::args& a, sdk::call&) {
        return tools.output(a.integer("id"), a.integer("offset", 0), a.integer("limit", 0), a.string("filter"));
      });
}

}  // namespace

TOOLHOST_PLUGIN("debugger", "1.0.0", "WinDbg-style debugger over debug-target backends (ntoseye's MCP tools)", init)
