#include "host/cli.hpp"

#include "host/suggest.hpp"

#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <string_view>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>

namespace toolhost::cli {
namespace {

// Flags that take a value, and those that do not: the list "did you mean" draws from.
constexpr std::string_view kValueFlags[] = {
    "--config", "--overlay", "--plugins", "--server", "--set",       "--backend", "--connect", "--kdnet-key",
    "--dump",   "--allow",   "--deny",    "--ask",    "--log-level", "--http",    "--token",   "--token-file"};
constexpr std::string_view kSwitches[] = {"--help", "--version", "--unsafe-http", "--json"};
constexpr std::string_view kCommands[] = {"serve", "plugins", "tools", "check-config"};

}  // namespace

std::string usage() {
  return R"(toolhost: an MCP server host whose tools come from plugins.

Usage:
  toolhost [--server NAME] [OPTIONS]   serve one server over MCP stdio (what MCP clients spawn)
  toolhost [--server NAME] --http HOST:PORT [OPTIONS]
                                       serve over MCP Streamable HTTP (see --http below)
  toolhost tools --server NAME [--json]
                                       list the tools an agent gets from that server
  toolhost plugins [--server NAME] [--json]
                                       list the plugins found, what each registers, and any load problem
  toolhost check-config [OPTIONS]      validate the configuration and start every enabled server's plugins
  toolhost --help | --version

Options:
  --config FILE      the configuration to read. Without it: $TOOLHOST_CONFIG, else
                     $XDG_CONFIG_HOME/toolhost/toolhost.toml (~/.config/...), else
                     toolhost/toolhost.toml in each $XDG_CONFIG_DIRS folder (/etc/xdg), else the
                     default installed with toolhost (<exe>/../share/toolhost/toolhost.toml).
                     Nothing is read from the current folder unless you name it.
  --overlay FILE     read FILE over the configuration: it names only what differs, e.g. one
                     [permissions] row (repeatable; later files win)
  --plugins DIR      also search DIR for plugins, before the config's folders (repeatable);
                     TOOLHOST_PLUGIN_PATH (colon-separated) adds folders the same way
  --server NAME      the server to serve (default: the config's default_server); with `plugins`,
                     list only that server's plugins
  --allow KIND, --deny KIND, --ask KIND
                     set permission kind KIND to allow, never or ask for this run, over every
                     [permissions] table (repeatable; `toolhost plugins` lists the kinds)
  --set PLUGIN.KEY=VALUE
                     override one setting of a plugin ([servers.NAME.settings.PLUGIN] KEY), for
                     this run only; VALUE is read as JSON when it parses, else as a string
  --backend B, --connect C, --kdnet-key K
                     ntoseye's launch flags: attach the debugger at the first call (shorthands for
                     --set debugger.backend=B, debugger.connect=C, debugger.key=K)
  --dump FILE        open a crash dump or core file at the first call (the same as --backend dump
                     --connect FILE)
  --log-level LEVEL  debug, info, warning or error: what toolhost writes to stderr (default info)
  --http HOST:PORT   serve MCP Streamable HTTP instead of stdio: the --server at /mcp, or without
                     --server every enabled server at /NAME/mcp (port 0 picks a free port)
  --unsafe-http      allow --http on an address other than loopback (127.0.0.1, [::1]); anyone
                     who can reach it can call the tools, so set a token too
  --token-file FILE  HTTP clients must send "Authorization: Bearer TOKEN", TOKEN being the first
                     line of FILE (which only you may read: chmod 600 FILE)
  --token TOKEN      the same with the token on the command line, where every local user can
                     read it (/proc/PID/cmdline); prefer --token-file or TOOLHOST_TOKEN
  --json             `plugins` and `tools` print JSON instead of a table

stdout carries only MCP messages; everything else goes to stderr. toolhost exits when stdin
closes, when its parent dies, or on SIGTERM.
)";
}

absl::StatusOr<options> parse(int argc, char** argv) {
  options o;
  int i = 1;
  if (i < argc) {
    const std::string_view first = argv[i];
    if (first == "plugins") {
      o.cmd = command::plugins;
      ++i;
    } else if (first == "tools") {
      o.cmd = command::tools;
      ++i;
    } else if (first == "check-config") {
      o.cmd = command::check_config;
      ++i;
    } else if (first == "serve") {
      ++i;
    } else if (!first.empty() && first[0] != '-') {
      const std::string guess =
          closest(first, std::vector<std::string_view>(std::begin(kCommands), std::end(kCommands)));
      return absl::InvalidArgumentError(cat("unknown command '", first, "'",
                                            guess.empty() ? "" : cat("; did you mean '", guess, "'?"),
                                            " (commands: serve, tools, plugins, check-config; see toolhost --help)"));
    }
  }
  std::vector<std::string_view> launch_target;  // --backend/--connect/--dump, in order: --dump names the target alone
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    // Accept --flag=value too.
    std::string_view flag = arg;
    std::optional<std::string> inline_value;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string_view::npos) {
      flag = arg.substr(0, eq);
      inline_value = std::string(arg.substr(eq + 1));
    }
    auto take = [&]() -> absl::StatusOr<std::string> {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc) return absl::InvalidArgumentError(cat(flag, " needs a value; see toolhost --help"));
      return std::string(argv[++i]);
    };
    const bool has_value = std::find(std::begin(kValueFlags), std::end(kValueFlags), flag) != std::end(kValueFlags);
    std::string v;
    if (has_value) {
      auto taken = take();
      if (!taken.ok()) return taken.status();
      v = *std::move(taken);
    } else if (inline_value && std::find(std::begin(kSwitches), std::end(kSwitches), flag) != std::end(kSwitches)) {
      return absl::InvalidArgumentError(cat(flag, " takes no value; see toolhost --help"));
    }
    if (flag == "--help" || flag == "-h") {
      o.cmd = command::help;
    } else if (flag == "--version") {
      o.cmd = command::version;
    } else if (flag == "--json") {
      o.json = true;
    } else if (flag == "--config") {
      o.config_path = v;
    } else if (flag == "--overlay") {
      o.overlays.push_back(v);
    } else if (flag == "--plugins") {
      o.plugin_dirs.push_back(v);
    } else if (flag == "--server") {
      o.server = v;
    } else if (flag == "--allow" || flag == "--deny" || flag == "--ask") {
      if (v.empty())
        return absl::InvalidArgumentError(cat(flag, " needs a permission kind, like ", flag, " eleven.rename"));
      o.permissions.emplace_back(flag == "--allow" ? "allow" : flag == "--deny" ? "never" : "ask", v);
    } else if (flag == "--set") {
      const auto dot = v.find('.');
      const auto eq = v.find('=');
      if (dot == std::string::npos || eq == std::string::npos || dot > eq || dot == 0 || eq == dot + 1) {
        return absl::InvalidArgumentError(
            cat("--set takes PLUGIN.KEY=VALUE, like --set debugger.backend=gdb; got '", v, "'"));
      }
      o.settings.push_back(v);
    } else if (flag == "--backend" || flag == "--connect" || flag == "--kdnet-key") {
      const char* key = flag == "--backend" ? "backend" : flag == "--connect" ? "connect" : "key";
      o.settings.push_back(cat("debugger.", key, "=", v));
      if (flag != "--kdnet-key") launch_target.push_back(flag);
    } else if (flag == "--dump") {
      if (v.empty())
        return absl::InvalidArgumentError("--dump needs the dump or core file to open, like --dump core.1234");
      o.settings.push_back("debugger.backend=dump");
      o.settings.push_back(cat("debugger.connect=", v));
      launch_target.push_back(flag);
    } else if (flag == "--http") {
      o.http = v;
    } else if (flag == "--unsafe-http") {
      o.unsafe_http = true;
    } else if (flag == "--token") {
      if (v.empty()) return absl::InvalidArgumentError("--token needs a non-empty value");
      o.token = v;
    } else if (flag == "--token-file") {
      o.token_file = v;
    } else if (flag == "--log-level") {
      if (v != "debug" && v != "info" && v != "warning" && v != "error") {
        return absl::InvalidArgumentError(cat("--log-level must be debug, info, warning or error, not '", v, "'"));
      }
      o.log_level = v;
    } else {
      std::vector<std::string_view> known(std::begin(kValueFlags), std::end(kValueFlags));
      known.insert(known.end(), std::begin(kSwitches), std::end(kSwitches));
      const std::string guess = closest(flag, known);
      return absl::InvalidArgumentError(cat("unknown argument '", arg, "'",
                                            guess.empty() ? "" : cat("; did you mean ", guess, "?"),
                                            " See toolhost --help"));
    }
  }
  if (o.token && !o.token_file.empty()) {
    return absl::InvalidArgumentError("--token and --token-file both name a token; give one of them");
  }
  if (std::find(launch_target.begin(), launch_target.end(), "--dump") != launch_target.end() &&
      launch_target.size() > 1) {
    return absl::InvalidArgumentError(
        "--dump FILE names the target by itself (the dump backend on FILE); drop --backend and --connect, or "
        "--dump");
  }
  return o;
}

}  // namespace toolhost::cli
