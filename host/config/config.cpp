#include "host/config/config.hpp"

#include <toolhost/sdk/strings.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <toml++/toml.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::config {
namespace {

namespace fs = std::filesystem;

std::string where(const std::string& file, const toml::source_region& r) {
  return cat(file, ":", r.begin.line, ":", r.begin.column);
}

absl::Status problem(const std::string& file, const toml::node& node, std::string_view key, std::string_view what) {
  return absl::InvalidArgumentError(cat(where(file, node.source()), ": ", key, ": ", what));
}

// Walks one table, refusing keys it does not know so that a typo is an error, not a silent no-op.
class table_reader {
 public:
  table_reader(const std::string& file, const toml::table& table, std::string prefix)
      : file_(file), table_(table), prefix_(std::move(prefix)) {}

  absl::Status check_keys(std::initializer_list<std::string_view> known) const {
    for (auto&& [key, value] : table_) {
      bool ok = false;
      for (auto k : known) ok = ok || key.str() == k;
      if (!ok) {
        std::string list;
        for (auto k : known) append(list, list.empty() ? "" : ", ", k);
        return problem(file_, value, full(key.str()), cat("unknown key; expected one of: ", list));
      }
    }
    return absl::OkStatus();
  }

  absl::Status string(std::string_view key, std::string& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return absl::OkStatus();
    if (!n->is_string()) return problem(file_, *n, full(key), "expected a string");
    out = *n->value<std::string>();
    return absl::OkStatus();
  }

  absl::Status boolean(std::string_view key, bool& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return absl::OkStatus();
    if (!n->is_boolean()) return problem(file_, *n, full(key), "expected true or false");
    out = *n->value<bool>();
    return absl::OkStatus();
  }

  absl::Status size(std::string_view key, size_t& out, int64_t min, int64_t max) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return absl::OkStatus();
    if (!n->is_integer()) return problem(file_, *n, full(key), "expected an integer");
    const int64_t v = *n->value<int64_t>();
    if (v < min || v > max) {
      return problem(file_, *n, full(key), cat("must be between ", min, " and ", max));
    }
    out = static_cast<size_t>(v);
    return absl::OkStatus();
  }

  absl::Status strings(std::string_view key, std::vector<std::string>& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return absl::OkStatus();
    const toml::array* a = n->as_array();
    if (a == nullptr) return problem(file_, *n, full(key), "expected an array of strings, like [\"a\", \"b\"]");
    out.clear();
    for (const toml::node& item : *a) {
      if (!item.is_string()) return problem(file_, item, full(key), "every item must be a string");
      out.push_back(*item.value<std::string>());
    }
    return absl::OkStatus();
  }

  absl::Status permissions(std::string_view key, std::map<std::string, permission, std::less<>>& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return absl::OkStatus();
    const toml::table* t = n->as_table();
    if (t == nullptr) return problem(file_, *n, full(key), "expected a table of permission kinds");
    for (auto&& [kind, value] : *t) {
      const std::string name = cat(full(key), ".", kind.str());
      auto p = value.is_string() ? parse_permission(*value.value<std::string>()) : std::nullopt;
      if (!p) return problem(file_, value, name, "expected \"allow\", \"ask\" or \"never\"");
      out[std::string(kind.str())] = *p;
    }
    return absl::OkStatus();
  }

  const toml::table* table(std::string_view key, absl::Status& status) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return nullptr;
    if (!n->is_table()) status = problem(file_, *n, full(key), "expected a table");
    return n->as_table();
  }

  std::string full(std::string_view key) const { return prefix_.empty() ? std::string(key) : cat(prefix_, ".", key); }

 private:
  const std::string& file_;
  const toml::table& table_;
  std::string prefix_;
};

bool valid_id(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string expand_dir(std::string dir, const std::string& config_dir, const std::string& exe_dir) {
  if (auto pos = dir.find("{exe}"); pos != std::string::npos) dir.replace(pos, 5, exe_dir);
  if (dir.rfind("~/", 0) == 0) {
    if (const char* home = std::getenv("HOME")) dir = std::string(home) + dir.substr(1);
  }
  fs::path p(dir);
  if (p.is_relative()) p = fs::path(config_dir) / p;
  return p.lexically_normal().string();
}

absl::Status read_server(const std::string& file, std::string_view name, const toml::node& node, server& out) {
  const std::string prefix = cat("servers.", name);
  if (!valid_id(name)) {
    return problem(file, node, prefix, "server names use letters, digits, '_', '-' and '.' only");
  }
  const toml::table* t = node.as_table();
  if (t == nullptr) return problem(file, node, prefix, "expected a table, like [servers.NAME]");
  out.name = std::string(name);
  out.source = where(file, node.source());
  table_reader r(file, *t, prefix);
  absl::Status s = r.check_keys({"description", "enabled", "plugins", "review_edits", "privacy", "permissions", "settings"});
  if (s.ok()) s = r.string("description", out.description);
  if (s.ok()) s = r.boolean("enabled", out.enabled);
  if (s.ok()) s = r.strings("plugins", out.plugins);
  if (s.ok()) s = r.boolean("review_edits", out.review_edits);
  if (s.ok()) s = r.permissions("permissions", out.permissions);
  if (!s.ok()) return s;
  if (const toml::table* p = r.table("privacy", s)) {
    table_reader pr(file, *p, prefix + ".privacy");
    s = pr.check_keys({"hide_home_in_paths", "ask_before_whole_file"});
    if (s.ok()) s = pr.boolean("hide_home_in_paths", out.privacy.hide_home_in_paths);
    if (s.ok()) s = pr.boolean("ask_before_whole_file", out.privacy.ask_before_whole_file);
  }
  if (!s.ok()) return s;
  if (const toml::table* settings = r.table("settings", s)) {
    for (auto&& [plugin, value] : *settings) {
      const toml::table* pt = value.as_table();
      if (pt == nullptr) {
        return problem(file, value, cat(prefix, ".settings.", plugin.str()),
                       "expected a table of this plugin's settings");
      }
      std::ostringstream json;
      json << toml::json_formatter{*pt};
      // toml++ writes indented JSON; plugins get it compact.
      auto doc = sdk::parse_json(json.str());
      out.settings[std::string(plugin.str())] = doc ? sdk::to_json(*doc) : "{}";
    }
  }
  return s;
}

}  // namespace

std::string_view to_string(permission p) {
  switch (p) {
    case permission::allow: return "allow";
    case permission::ask: return "ask";
    case permission::never: return "never";
  }
  return "ask";
}

std::optional<permission> parse_permission(std::string_view text) {
  if (text == "allow") return permission::allow;
  if (text == "ask") return permission::ask;
  if (text == "never") return permission::never;
  return std::nullopt;
}

const server* config::find_server(std::string_view name) const {
  for (const server& s : servers) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::optional<permission> config::permission_for(const server& s, std::string_view kind) const {
  if (auto it = s.permissions.find(kind); it != s.permissions.end()) return it->second;
  if (auto it = permissions.find(kind); it != permissions.end()) return it->second;
  return std::nullopt;
}

absl::StatusOr<config> parse(std::string_view text, const std::string& source, const std::string& exe_dir) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(cat(where(source, e.source()), ": ", e.description()));
  }
  config out;
  out.path = source;
  out.dir = source.empty() ? fs::current_path().string() : fs::absolute(fs::path(source)).parent_path().string();

  table_reader r(source, root, "");
  absl::Status s = r.check_keys({"plugin_dirs", "default_server", "page_size", "permissions", "servers", "http"});
  std::vector<std::string> dirs;
  if (s.ok()) s = r.strings("plugin_dirs", dirs);
  if (s.ok()) s = r.string("default_server", out.default_server);
  if (s.ok()) s = r.size("page_size", out.page_size, 1, 10000);
  if (s.ok()) s = r.permissions("permissions", out.permissions);
  if (!s.ok()) return s;
  for (auto& d : dirs) out.plugin_dirs.push_back(expand_dir(d, out.dir, exe_dir));

  if (const toml::table* h = r.table("http", s)) {
    table_reader hr(source, *h, "http");
    s = hr.check_keys({"token", "allowed_origins", "max_body_bytes"});
    if (s.ok()) s = hr.string("token", out.http.token);
    if (s.ok()) s = hr.strings("allowed_origins", out.http.allowed_origins);
    if (s.ok()) s = hr.size("max_body_bytes", out.http.max_body_bytes, 1024, int64_t{1} << 30);
  }
  if (!s.ok()) return s;

  if (const toml::table* servers = r.table("servers", s)) {
    for (auto&& [name, node] : *servers) {
      server sv;
      if (s = read_server(source, name.str(), node, sv); !s.ok()) return s;
      out.servers.push_back(std::move(sv));
    }
  }
  if (!s.ok()) return s;

  if (!out.default_server.empty() && out.find_server(out.default_server) == nullptr) {
    const toml::node* n = root.get("default_server");
    return problem(source, *n, "default_server",
                   cat("no [servers.", out.default_server, "] table declares this server"));
  }
  return out;
}

absl::Status override_setting(config& cfg, std::string_view spec) {
  const size_t dot = spec.find('.');
  const size_t eq = spec.find('=');
  if (dot == std::string_view::npos || eq == std::string_view::npos || dot > eq) {
    return absl::InvalidArgumentError(cat("a setting override is PLUGIN.KEY=VALUE, not '", spec, "'"));
  }
  const std::string plugin(spec.substr(0, dot));
  const std::string key(spec.substr(dot + 1, eq - dot - 1));
  const std::string text(spec.substr(eq + 1));
  bool applied = false;
  for (server& s : cfg.servers) {
    if (std::find(s.plugins.begin(), s.plugins.end(), plugin) == s.plugins.end()) continue;
    auto it = s.settings.find(plugin);
    auto doc = sdk::parse_json(it != s.settings.end() ? it->second : "{}");
    if (!doc || !doc->IsObject()) doc.emplace().SetObject();
    auto& alloc = doc->GetAllocator();
    rapidjson::Value value;
    if (auto parsed = sdk::parse_json(text); parsed && !parsed->IsObject()) {
      value.CopyFrom(*parsed, alloc);
    } else {
      value.SetString(text.data(), static_cast<rapidjson::SizeType>(text.size()), alloc);
    }
    doc->RemoveMember(key.c_str());
    doc->AddMember(rapidjson::Value(key.c_str(), alloc), value, alloc);
    s.settings[plugin] = sdk::to_json(*doc);
    applied = true;
  }
  if (!applied) {
    return absl::InvalidArgumentError(cat("no server in the config serves plugin '", plugin, "', so '", spec,
                                          "' would change nothing"));
  }
  return absl::OkStatus();
}

absl::StatusOr<config> load(const std::string& path, const std::string& exe_dir) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(cat(path, ": cannot read the configuration file (",
                                            std::strerror(errno), ")"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path, exe_dir);
}

std::string default_path(const std::string& exe_dir) {
  std::vector<fs::path> candidates;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    candidates.push_back(fs::path(xdg) / "toolhost" / "toolhost.toml");
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    candidates.push_back(fs::path(home) / ".config" / "toolhost" / "toolhost.toml");
  }
  candidates.push_back(fs::path("config") / "toolhost.toml");
  candidates.push_back(fs::path(exe_dir) / ".." / "share" / "toolhost" / "toolhost.toml");
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c.lexically_normal().string();
  }
  return "";
}

}  // namespace toolhost::config
