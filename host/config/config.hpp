// toolhost's configuration: which plugins folders to search, which servers exist and what each
// may do. Read from TOML (toml++); every error names file:line:column and the key.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::config {

// A permission row's setting.
enum class permission { allow, ask, never };
std::string_view to_string(permission p);
std::optional<permission> parse_permission(std::string_view text);

struct privacy {
  bool hide_home_in_paths = false;     // replace the home folder with ~ in every answer
  bool ask_before_whole_file = false;  // ask before a tool sends a whole file
};

struct server {
  std::string name;
  std::string description;
  bool enabled = true;
  std::vector<std::string> plugins;  // plugin ids, in load order
  bool review_edits = false;         // edits are filed as suggestions; reviewable tools never ask
  struct privacy privacy;
  std::map<std::string, permission, std::less<>> permissions;  // overrides of the global table
  std::map<std::string, std::string, std::less<>> settings;    // plugin id -> JSON object text
  std::string source;                                          // "file:line:column" of its table
  bool listing = false;  // started only to list what its plugins register (toolhost plugins)
};

struct http {
  std::string token;                         // bearer token required on every request, if set
  std::vector<std::string> allowed_origins;  // Origins accepted besides loopback ones
  size_t max_body_bytes = 4u << 20;
};

struct config {
  std::string path;  // the file read; empty for the built-in defaults
  std::string dir;   // its folder: relative paths in settings are relative to it
  std::vector<std::string> plugin_dirs;  // expanded: {exe} and relative paths resolved
  std::string default_server;
  std::map<std::string, permission, std::less<>> permissions;
  std::vector<server> servers;  // in file order
  size_t page_size = 100;       // items per page of tools/list and the other lists
  struct http http;

  const server* find_server(std::string_view name) const;
  // The effective setting of a permission kind in a server, or nullopt if the config says
  // nothing about it (the kind's default applies).
  std::optional<permission> permission_for(const server& s, std::string_view kind) const;
};

// Parses TOML text. `source` names it in errors; `exe_dir` replaces "{exe}" in plugin_dirs.
absl::StatusOr<config> parse(std::string_view text, const std::string& source, const std::string& exe_dir);

// Applies "PLUGIN.KEY=VALUE" to the settings of PLUGIN in every server that serves it. VALUE is
// taken as JSON when it parses as JSON (numbers, true/false, arrays), else as a string.
absl::Status override_setting(config& cfg, std::string_view spec);

// Reads and parses a file.
absl::StatusOr<config> load(const std::string& path, const std::string& exe_dir);

// The file to read when --config is not given: $XDG_CONFIG_HOME/toolhost/toolhost.toml (or
// ~/.config/...) when it exists, else ./config/toolhost.toml when it exists, else the installed
// default next to the executable; empty when there is none (built-in defaults apply).
std::string default_path(const std::string& exe_dir);

}  // namespace toolhost::config
