// What every command does first: find and read the configuration the user named, apply the
// command line over it, and pick the server to serve. Errors are printed here, as one sentence
// each, so that the commands only return the exit code.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "host/cli.hpp"
#include "host/config/config.hpp"

namespace toolhost::commands {

// Prints "toolhost: MESSAGE" on stderr: for the user, without the log's component names.
void fail(std::string_view message);

// The folder of the toolhost executable ("{exe}" in plugin_dirs).
std::string exe_dir();

// The configuration, with --plugins, TOOLHOST_PLUGIN_PATH, --overlay, --set and
// --allow/--deny/--ask applied; nullopt after printing why there is none. `need_config`: false
// for `toolhost plugins`, which can list plugin folders without one.
std::optional<config::config> load_config(const cli::options& o, bool need_config = true);

// The server `name` (or the default one when empty), enabled; nullptr after printing why not.
const config::server* choose_server(const config::config& cfg, const std::string& name);

// Writes a command's output to the descriptor that was stdout before plugins loaded.
void emit(int fd, const std::string& text);

}  // namespace toolhost::commands
