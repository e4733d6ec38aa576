// The command line: `toolhost [COMMAND] [OPTIONS]`.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::cli {

enum class command { serve, plugins, tools, check_config, help, version };

struct options {
  command cmd = command::serve;
  std::string config_path;               // --config FILE
  std::vector<std::string> overlays;     // --overlay FILE (repeatable): only what differs
  std::vector<std::string> plugin_dirs;  // --plugins DIR (repeatable)
  std::string server;                    // --server NAME
  std::optional<std::string> log_level;  // --log-level LEVEL
  std::string http;                      // --http HOST:PORT: serve Streamable HTTP instead of stdio
  bool unsafe_http = false;              // --unsafe-http: allow a non-loopback --http address
  std::optional<std::string> token;      // --token TOKEN: bearer token HTTP clients must send
  std::string token_file;                // --token-file FILE: the same, read from a file
  bool json = false;                     // --json: `plugins` and `tools` print JSON
  // --set PLUGIN.KEY=VALUE (repeatable): overrides one plugin setting of the served servers.
  // --backend/--connect/--kdnet-key are ntoseye's launch flags, shorthands for debugger.* settings.
  std::vector<std::string> settings;
  // --allow/--deny/--ask KIND (repeatable): {"allow" | "never" | "ask", KIND}, for this run.
  std::vector<std::pair<std::string, std::string>> permissions;
};

absl::StatusOr<options> parse(int argc, char** argv);

// The text of `toolhost --help`.
std::string usage();

}  // namespace toolhost::cli
