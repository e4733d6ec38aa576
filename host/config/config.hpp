// toolhost's configuration: which plugins folders to search, which servers exist and what each
// may do. Read from TOML (toml++); every error names file:line:column and the key.
#pragma once

#include <cstddef>
#include <cstdint>
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

// One row of a [permissions] table (or a --allow/--deny/--ask flag), with where it was written:
// "file:line:column", or the flag as typed.
struct permission_row {
  permission value = permission::ask;
  std::string source;
};
using permission_rows = std::map<std::string, permission_row, std::less<>>;

// Per-tool settings of a server: [servers.NAME.tools.TOOL].
struct tool_settings {
  uint32_t call_timeout_ms = 0;  // 0: the server's call_timeout_ms applies
  std::string source;            // "file:line:column" of its table
};

// Where a plugin's code runs: in the toolhost process, or in a child process of its own
// (host/plugins/isolation/DESIGN.md).
enum class isolation { none, process };
std::string_view to_string(isolation i);

// [servers.NAME.plugin_options.ID]: how one plugin of a server runs.
struct plugin_run_options {
  std::optional<enum isolation> isolation;  // unset: the server's, else the default
  std::string group;                        // isolated plugins with the same group share one process
  uint32_t memory_limit_mb = 0;             // 0: the server's
  std::string source;                       // "file:line:column" of its table
};

struct privacy {
  bool hide_home_in_paths = false;     // replace the home folder with ~ in every answer
  bool ask_before_whole_file = false;  // ask before a tool sends a whole file
};

// Where a plugin's settings were written, for messages: "file:line:column" of each value, or the
// --set flag that gave it, as typed.
struct settings_origin {
  std::string table;  // the [servers.NAME.settings.PLUGIN] table; the server's table when there is none
  std::map<std::string, std::string, std::less<>> values;  // by path: "timeout_ms", "env.HOME", "deny[1]"

  // Where the value at `path` was written: its own place, else that of the nearest table or array
  // that holds it, else the table's.
  const std::string& where(std::string_view path) const;
};

struct server {
  std::string name;
  std::string description;
  bool enabled = true;
  std::vector<std::string> plugins;  // plugin ids, in load order
  bool review_edits = false;         // edits are filed as suggestions; reviewable tools never ask
  struct privacy privacy;
  permission_rows permissions;                                           // overrides of the global table
  std::map<std::string, std::string, std::less<>> settings;              // plugin id -> JSON object text
  std::map<std::string, settings_origin, std::less<>> settings_origins;  // plugin id -> where
  // A call that has not answered after this long is answered with a tool error (0: no limit).
  uint32_t call_timeout_ms = 0;
  std::map<std::string, tool_settings, std::less<>> tools;  // by tool name
  std::string source;                                       // "file:line:column" of its table
  std::optional<enum isolation> isolation;                  // unset: each plugin's default
  uint32_t memory_limit_mb = 0;                             // of each isolated plugin's process; 0: the default
  std::map<std::string, plugin_run_options, std::less<>> plugin_options;  // by plugin id

  // The time limit of one call of `tool`, in milliseconds; 0 for none.
  uint32_t call_timeout_for(std::string_view tool) const;
  bool listing = false;   // started only to list what its plugins register (toolhost plugins)
  bool checking = false;  // started only to be checked (check-config): TOOLHOST_HOST_CHECKING
};

struct http {
  std::string token;                         // bearer token required on every request, if set
  std::vector<std::string> allowed_origins;  // Origins accepted besides loopback ones
  size_t max_body_bytes = 4u << 20;
};

struct config {
  std::string path;                      // the file read; empty when none was (only `toolhost plugins --plugins DIR`)
  std::vector<std::string> overlays;     // files read over it (--overlay), in order
  std::string dir;                       // its folder: relative paths in settings are relative to it
  std::vector<std::string> plugin_dirs;  // expanded: {exe} and relative paths resolved
  std::string default_server;
  permission_rows permissions;
  // --allow/--deny/--ask KIND: for this run, they win over every table.
  permission_rows run_permissions;
  std::vector<server> servers;  // in file order
  size_t page_size = 100;       // items per page of tools/list and the other lists
  struct http http;

  const server* find_server(std::string_view name) const;
  // The effective setting of a permission kind in a server, or nullopt if the config says
  // nothing about it (the kind's default applies).
  std::optional<permission> permission_for(const server& s, std::string_view kind) const;
  // The row that decides `kind` in `s`, or nullptr.
  const permission_row* permission_row_for(const server& s, std::string_view kind) const;
  // Where the rows of `s` can be changed, for messages: the files read.
  std::string files() const;
};

// Parses TOML text. `source` names it in errors; `exe_dir` replaces "{exe}" in plugin_dirs.
absl::StatusOr<config> parse(std::string_view text, const std::string& source, const std::string& exe_dir);

// Applies "PLUGIN.KEY=VALUE" to the settings of PLUGIN in every server that serves it. VALUE is
// taken as JSON when it parses as JSON (numbers, true/false, arrays), else as a string.
absl::Status override_setting(config& cfg, std::string_view spec);

// Parses several TOML texts as one: each later text (an overlay) names only what differs from
// the ones before it. Tables merge key by key; any other value, arrays included, replaces the
// earlier one. Errors name the file that wrote the value. texts: {source, text} pairs.
absl::StatusOr<config> parse_layers(const std::vector<std::pair<std::string, std::string>>& texts,
                                    const std::string& exe_dir);

// Reads and parses a file, and the overlays over it.
absl::StatusOr<config> load(const std::string& path, const std::string& exe_dir,
                            const std::vector<std::string>& overlays = {});

// Refuses TOML text that nests deeper than any toolhost configuration needs (dotted keys,
// table headers, arrays and inline tables), before a parser recurses into it.
absl::Status check_nesting(std::string_view text, const std::string& source);

// Sets permission kind `kind` to `value` for this run (--allow, --deny, --ask), over every table.
// `flag` names it in messages ("--allow").
absl::Status override_permission(config& cfg, std::string_view kind, permission value, std::string_view flag);

// Where toolhost looks for its configuration, in order, and what it found. Nothing in the current
// folder is read unless the user names it: MCP clients start servers in the project folder, and
// a repository's config would otherwise run the plugins it names.
struct discovery {
  std::string path;                 // the file to read; empty when none was found
  std::string how;                  // what named it: "--config", "TOOLHOST_CONFIG", ...
  std::vector<std::string> looked;  // every place tried, for the message when none was found
};
// explicit_path: --config, or empty. The order: --config, $TOOLHOST_CONFIG,
// $XDG_CONFIG_HOME/toolhost/toolhost.toml (default ~/.config), each $XDG_CONFIG_DIRS folder's
// toolhost/toolhost.toml (default /etc/xdg), then the default installed with the executable,
// <exe>/../share/toolhost/toolhost.toml (the build tree has one too).
discovery discover(const std::string& explicit_path, const std::string& exe_dir);

}  // namespace toolhost::config
