#include "host/commands/setup.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>
#include <boost/dll/runtime_symbol_info.hpp>
#include <toolhost/sdk/strings.hpp>

#include "host/policy/file_trust.hpp"
#include "host/suggest.hpp"

namespace toolhost::commands {

void fail(std::string_view message) { std::cerr << "toolhost: " << message << "\n"; }

std::string exe_dir() { return boost::dll::program_location().parent_path().string(); }

void emit(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::optional<config::config> load_config(const cli::options& o, bool need_config) {
  const std::string exe = exe_dir();
  const config::discovery found = config::discover(o.config_path, exe);
  const bool folders_named = !o.plugin_dirs.empty() || std::getenv("TOOLHOST_PLUGIN_PATH") != nullptr;
  absl::StatusOr<config::config> cfg;
  if (found.path.empty()) {
    if (need_config || !folders_named) {
      fail(cat("no configuration found; looked at ", absl::StrJoin(found.looked, ", "),
               ". Name one with --config FILE (the repository's config/toolhost.toml is the default), or copy it to ",
               found.looked.size() > 2 ? found.looked[2] : std::string("~/.config/toolhost/toolhost.toml")));
      return std::nullopt;
    }
    cfg = config::parse("", "", exe);
  } else {
    std::vector<std::string> files = {found.path};
    files.insert(files.end(), o.overlays.begin(), o.overlays.end());
    for (const auto& file : files) {
      if (absl::Status s = policy::check_trusted(file, "configuration"); !s.ok()) {
        fail(view(s.message()));
        return std::nullopt;
      }
    }
    cfg = config::load(found.path, exe, o.overlays);
  }
  if (!cfg.ok()) {
    fail(view(cfg.status().message()));
    return std::nullopt;
  }
  // Folders from the command line and the environment come first: they are the user's choice
  // for this run.
  std::vector<std::string> dirs = o.plugin_dirs;
  if (const char* env = std::getenv("TOOLHOST_PLUGIN_PATH"); env != nullptr && *env != '\0') {
    for (auto part : absl::StrSplit(env, ':', absl::SkipEmpty())) dirs.emplace_back(part);
  }
  dirs.insert(dirs.end(), cfg->plugin_dirs.begin(), cfg->plugin_dirs.end());
  cfg->plugin_dirs = std::move(dirs);
  for (const std::string& spec : o.settings) {
    if (absl::Status s = config::override_setting(*cfg, spec); !s.ok()) {
      fail(view(s.message()));
      return std::nullopt;
    }
  }
  for (const auto& [value, kind] : o.permissions) {
    const std::string flag = value == "allow" ? "--allow" : value == "never" ? "--deny" : "--ask";
    if (absl::Status s = config::override_permission(*cfg, kind, *config::parse_permission(value), flag); !s.ok()) {
      fail(view(s.message()));
      return std::nullopt;
    }
  }
  return *std::move(cfg);
}

const config::server* choose_server(const config::config& cfg, const std::string& requested) {
  if (cfg.servers.empty()) {
    fail(cat(cfg.files(), " declares no servers; add a [servers.NAME] table with plugins = [...] ",
             "(README.md, \"Configuration\")"));
    return nullptr;
  }
  std::string name = requested.empty() ? cfg.default_server : requested;
  if (name.empty() && cfg.servers.size() == 1) name = cfg.servers.front().name;
  std::vector<std::string> names;
  for (const auto& s : cfg.servers) names.push_back(s.name);
  if (name.empty()) {
    fail(cat("no server named: pass --server NAME or set default_server in ", cfg.files(),
             " (servers: ", absl::StrJoin(names, ", "), ")"));
    return nullptr;
  }
  const config::server* s = cfg.find_server(name);
  if (s == nullptr) {
    const std::string guess = closest(name, names);
    fail(cat("no server named '", name, "' in ", cfg.files(), guess.empty() ? "" : cat("; did you mean '", guess, "'?"),
             " (servers: ", absl::StrJoin(names, ", "), ")"));
    return nullptr;
  }
  if (!s->enabled) {
    fail(cat("server '", name, "' is disabled (enabled = false at ", s->source,
             "); set enabled = true there, or in an --overlay file, to serve it"));
    return nullptr;
  }
  return s;
}

}  // namespace toolhost::commands
