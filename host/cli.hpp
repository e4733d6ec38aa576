// The command line: `toolhost [COMMAND] [OPTIONS]`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::cli {

enum class command { serve, plugins, check_config, help, version };

struct options {
  command cmd = command::serve;
  std::string config_path;                // --config FILE
  std::vector<std::string> plugin_dirs;   // --plugins DIR (repeatable)
  std::string server;                     // --server NAME
  std::optional<std::string> log_level;   // --log-level LEVEL
};

absl::StatusOr<options> parse(int argc, char** argv);

// The text of `toolhost --help`.
std::string usage();

}  // namespace toolhost::cli
