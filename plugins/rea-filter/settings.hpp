// The plugin's settings ([servers.NAME.settings.rea-filter]) turned into what the proxy needs.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <absl/status/statusor.h>
#include <rapidjson/document.h>

#include <toolhost/mcp_client/transport.hpp>

#include "filter.hpp"

namespace toolhost::rea_filter {

// REA's own registration: what eleven-rea runs when the settings name no upstream.
inline constexpr const char* kReaCommand[] = {"npx", "-y", "rea-agents", "mcp"};
// Where Eleven finds the IDA MCP plugin's JSON config.
inline constexpr const char* kIdaConfigVariable = "REA_IDA_MCP_CONFIG";

// What [servers.NAME.settings.rea-filter] may hold; the host checks the table against it, and
// parse_settings refuses a key it does not name on a host that does not.
inline constexpr const char* kSettingsSchema = R"json({"type": "object", "properties": {
  "command": {"type": "array", "items": {"type": "string"}, "description": "The upstream MCP server to run: program, then arguments"},
  "url": {"type": "string", "description": "A Streamable HTTP upstream, instead of command"},
  "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Environment variables for the upstream"},
  "cwd": {"type": "string", "description": "The upstream's working folder (relative to the config's folder)"},
  "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "HTTP headers sent to url"},
  "deny": {"type": "array", "items": {"type": "string"}, "description": "Upstream tools the agent does not get"},
  "use_instead": {"type": "object", "additionalProperties": {"type": "string"}, "description": "For a denied tool, what to use instead"},
  "filter": {"type": "string", "enum": ["eleven-rea", "none"], "description": "A preset of denied tools"},
  "timeout_ms": {"type": "integer", "minimum": 1, "description": "The longest one tool call may take, in milliseconds"},
  "start_timeout_ms": {"type": "integer", "minimum": 1, "description": "The longest the upstream may take to start, in milliseconds"},
  "instructions_wait_ms": {"type": "integer", "minimum": 0, "description": "How long a client's initialize may wait for the upstream's instructions"},
  "ida_config": {"type": "string", "description": "The IDA MCP plugin's JSON config, instead of REA_IDA_MCP_CONFIG"},
  "ida_server": {"type": "string", "description": "Which server of that config, when it has several"}
}})json";

struct proxy_settings {
  toolhost::mcp_client::upstream_spec upstream;
  tool_filter filter;
  std::chrono::milliseconds timeout{30 * 60 * 1000};  // one tool call, progress or not
  std::chrono::milliseconds start_timeout{120 * 1000};
  // How long a client's initialize may wait for the upstream's instructions while the first
  // start is still running.
  std::chrono::milliseconds instructions_wait{3000};
  // The label of the read-only permission row: REA's and IDA's tools read the open file; a
  // custom server's are named after that server and its upstream.
  std::string read_label;
};

// What the settings parser needs from its surroundings (the host, the environment).
struct settings_context {
  std::string server_name;
  std::string config_dir;      // relative paths in the settings are relative to it
  std::string ida_config_env;  // the value of REA_IDA_MCP_CONFIG, empty when unset
};

// Parses the settings object. Errors name the setting and what is wrong with it.
absl::StatusOr<proxy_settings> parse_settings(const rapidjson::Value& settings, const settings_context& context);

// Reads an MCP client config in the usual {"mcpServers": {NAME: {command, args, env} | {url}}}
// form and returns the server `wanted` (or the only one when `wanted` is empty).
absl::StatusOr<toolhost::mcp_client::upstream_spec> read_mcp_servers_config(std::string_view path,
                                                                            std::string_view wanted);

}  // namespace toolhost::rea_filter
