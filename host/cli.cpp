#include "host/cli.hpp"

#include <toolhost/sdk/strings.hpp>
#include <string_view>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>

namespace toolhost::cli {

std::string usage() {
  return R"(toolhost: an MCP server host whose tools come from plugins.

Usage:
  toolhost [--server NAME] [OPTIONS]   serve one server over MCP stdio (what MCP clients spawn)
  toolhost [--server NAME] --http HOST:PORT [OPTIONS]
                                       serve over MCP Streamable HTTP (see --http below)
  toolhost plugins [OPTIONS]           list the plugins found, what each registers, and any load problem
  toolhost check-config [OPTIONS]      validate the configuration and start every enabled server's plugins
  toolhost --help | --version

Options:
  --config FILE      the configuration to read (default: $XDG_CONFIG_HOME/toolhost/toolhost.toml if it
                     exists, else ./config/toolhost.toml, else the installed one)
  --plugins DIR      also search DIR for plugins, before the config's folders (repeatable);
                     TOOLHOST_PLUGIN_PATH (colon-separated) adds folders the same way
  --server NAME      the server to serve (default: the config's default_server); with `plugins`,
                     list only that server's plugins
  --set PLUGIN.KEY=VALUE
                     override one setting of a plugin ([servers.NAME.settings.PLUGIN] KEY), for
                     this run only; VALUE is read as JSON when it parses, else as a string
  --backend B, --connect C, --kdnet-key K
                     ntoseye's launch flags: attach the debugger at the first call (shorthands for
                     --set debugger.backend=B, debugger.connect=C, debugger.key=K)
  --log-level LEVEL  debug, info, warning or error: what toolhost writes to stderr (default info)
  --http HOST:PORT   serve MCP Streamable HTTP instead of stdio: the --server at /mcp, or without
                     --server every enabled server at /NAME/mcp (port 0 picks a free port)
  --unsafe-http      allow --http on an address other than loopback (127.0.0.1, [::1]); anyone
                     who can reach it can call the tools, so set a token too
  --token TOKEN      HTTP clients must send "Authorization: Bearer TOKEN" (also TOOLHOST_TOKEN,
                     or token in the config's [http] table)

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
    } else if (first == "check-config") {
      o.cmd = command::check_config;
      ++i;
    } else if (first == "serve") {
      ++i;
    }
  }
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::string_view flag) -> absl::StatusOr<std::string> {
      if (i + 1 >= argc) return absl::InvalidArgumentError(cat(flag, " needs a value; see toolhost --help"));
      return std::string(argv[++i]);
    };
    // Accept --flag=value too.
    std::string_view flag = arg;
    std::optional<std::string> inline_value;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string_view::npos) {
      flag = arg.substr(0, eq);
      inline_value = std::string(arg.substr(eq + 1));
    }
    auto take = [&]() -> absl::StatusOr<std::string> {
      if (inline_value) return *inline_value;
      return value(flag);
    };
    if (flag == "--help" || flag == "-h") {
      o.cmd = command::help;
    } else if (flag == "--version") {
      o.cmd = command::version;
    } else if (flag == "--config") {
      auto v = take();
      if (!v.ok()) return v.status();
      o.config_path = *v;
    } else if (flag == "--plugins") {
      auto v = take();
      if (!v.ok()) return v.status();
      o.plugin_dirs.push_back(*v);
    } else if (flag == "--server") {
      auto v = take();
      if (!v.ok()) return v.status();
      o.server = *v;
    } else if (flag == "--set") {
      auto v = take();
      if (!v.ok()) return v.status();
      const auto dot = v->find('.');
      const auto eq = v->find('=');
      if (dot == std::string::npos || eq == std::string::npos || dot > eq || dot == 0 || eq == dot + 1) {
        return absl::InvalidArgumentError(
            cat("--set takes PLUGIN.KEY=VALUE, like --set debugger.backend=gdb; got '", *v, "'"));
      }
      o.settings.push_back(*v);
    } else if (flag == "--backend" || flag == "--connect" || flag == "--kdnet-key") {
      auto v = take();
      if (!v.ok()) return v.status();
      const char* key = flag == "--backend" ? "backend" : flag == "--connect" ? "connect" : "key";
      o.settings.push_back(cat("debugger.", key, "=", *v));
    } else if (flag == "--http") {
      auto v = take();
      if (!v.ok()) return v.status();
      o.http = *v;
    } else if (flag == "--unsafe-http") {
      o.unsafe_http = true;
    } else if (flag == "--token") {
      auto v = take();
      if (!v.ok()) return v.status();
      if (v->empty()) return absl::InvalidArgumentError("--token needs a non-empty value");
      o.token = *v;
    } else if (flag == "--log-level") {
      auto v = take();
      if (!v.ok()) return v.status();
      if (*v != "debug" && *v != "info" && *v != "warning" && *v != "error") {
        return absl::InvalidArgumentError(
            cat("--log-level must be debug, info, warning or error, not '", *v, "'"));
      }
      o.log_level = *v;
    } else {
      return absl::InvalidArgumentError(cat("unknown argument '", arg, "'; see toolhost --help"));
    }
  }
  return o;
}

}  // namespace toolhost::cli
