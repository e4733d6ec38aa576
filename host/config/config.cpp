#include "host/config/config.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <toolhost/sdk/strings.hpp>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <toml++/toml.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::config {
namespace {

namespace fs = std::filesystem;

// "file:line:column" of a node. Nodes remember the file that wrote them, which is not `file`
// when an overlay did.
std::string where(const std::string& file, const toml::source_region& r) {
  return cat(r.path != nullptr && !r.path->empty() ? *r.path : file, ":", r.begin.line, ":", r.begin.column);
}

absl::Status problem(const std::string& file, const toml::node& node, std::string_view key, std::string_view what) {
  return absl::InvalidArgumentError(cat(where(file, node.source()), ": ", key, ": ", what));
}

// The folder of the file that wrote `node`: relative paths in it are relative to that file.
std::string folder_of(const toml::node& node, const std::string& fallback) {
  const auto& path = node.source().path;
  if (path == nullptr || path->empty()) return fallback;
  return fs::absolute(fs::path(*path)).parent_path().string();
}

// Deepest a dotted key, table header, array or inline table may nest. toolhost's own tables
// nest four deep; plugin settings get room to spare. toml++ recurses per level, so a key of
// 50,000 parts overflowed the stack before this check.
constexpr int kMaxNesting = 64;

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

  absl::Status permissions(std::string_view key, permission_rows& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return absl::OkStatus();
    const toml::table* t = n->as_table();
    if (t == nullptr) return problem(file_, *n, full(key), "expected a table of permission kinds");
    for (auto&& [kind, value] : *t) {
      const std::string name = cat(full(key), ".", kind.str());
      auto p = value.is_string() ? parse_permission(*value.value<std::string>()) : std::nullopt;
      if (!p) return problem(file_, value, name, "expected \"allow\", \"ask\" or \"never\"");
      // The key's position: an unknown kind is reported where its name was typed.
      out[std::string(kind.str())] = permission_row{*p, where(file_, kind.source())};
    }
    return absl::OkStatus();
  }

  absl::Status milliseconds(std::string_view key, uint32_t& out) const {
    size_t v = out;
    // Up to a day: a longer limit is no limit, and 0 means none.
    absl::Status s = size(key, v, 0, 86'400'000);
    out = static_cast<uint32_t>(v);
    return s;
  }

  absl::Status isolation(std::string_view key, std::optional<enum isolation>& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return absl::OkStatus();
    const std::optional<std::string> v = n->value<std::string>();
    if (!n->is_string() || (*v != "process" && *v != "none")) {
      return problem(file_, *n, full(key),
                     "expected \"process\" (a child process of its own) or \"none\" (in toolhost)");
    }
    out = *v == "process" ? isolation::process : isolation::none;
    return absl::OkStatus();
  }

  absl::Status megabytes(std::string_view key, uint32_t& out) const {
    size_t v = out;
    absl::Status s = size(key, v, 16, 1 << 20);  // 16 MiB to 1 TiB
    out = static_cast<uint32_t>(v);
    return s;
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
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
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

// Records where each value under `node` was written (a table member at its key, an array item at
// itself), by the path a schema check names it with: "env.HOME", "deny[1]".
void record_origins(const std::string& file, const toml::node& node, const std::string& path, settings_origin& out) {
  if (const toml::table* t = node.as_table()) {
    for (auto&& [key, value] : *t) {
      const std::string at = path.empty() ? std::string(key.str()) : cat(path, ".", key.str());
      out.values[at] = where(file, key.source().begin.line != 0 ? key.source() : value.source());
      record_origins(file, value, at, out);
    }
  } else if (const toml::array* a = node.as_array()) {
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string at = cat(path, "[", i, "]");
      out.values[at] = where(file, a->get(i)->source());
      record_origins(file, *a->get(i), at, out);
    }
  }
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
  absl::Status s = r.check_keys({"description", "enabled", "plugins", "review_edits", "call_timeout_ms", "privacy",
                                 "permissions", "settings", "tools", "isolation", "memory_limit_mb", "plugin_options"});
  if (s.ok()) s = r.string("description", out.description);
  if (s.ok()) s = r.boolean("enabled", out.enabled);
  if (s.ok()) s = r.strings("plugins", out.plugins);
  if (s.ok()) s = r.boolean("review_edits", out.review_edits);
  if (s.ok()) s = r.milliseconds("call_timeout_ms", out.call_timeout_ms);
  if (s.ok()) s = r.permissions("permissions", out.permissions);
  if (s.ok()) s = r.isolation("isolation", out.isolation);
  if (s.ok()) s = r.megabytes("memory_limit_mb", out.memory_limit_mb);
  if (!s.ok()) return s;
  if (const toml::table* plugins = r.table("plugin_options", s)) {
    for (auto&& [plugin, value] : *plugins) {
      const std::string plugin_prefix = cat(prefix, ".plugin_options.", plugin.str());
      const toml::table* pt = value.as_table();
      if (pt == nullptr) return problem(file, value, plugin_prefix, "expected a table of how this plugin runs");
      if (std::find(out.plugins.begin(), out.plugins.end(), plugin.str()) == out.plugins.end()) {
        return problem(file, value, plugin_prefix,
                       cat("names plugin '", plugin.str(), "', which ", prefix, ".plugins does not list"));
      }
      table_reader pr(file, *pt, plugin_prefix);
      plugin_run_options po;
      po.source = where(file, plugin.source());
      s = pr.check_keys({"isolation", "group", "memory_limit_mb"});
      if (s.ok()) s = pr.isolation("isolation", po.isolation);
      if (s.ok()) s = pr.string("group", po.group);
      if (s.ok()) s = pr.megabytes("memory_limit_mb", po.memory_limit_mb);
      if (!s.ok()) return s;
      if (!po.group.empty() && !valid_id(po.group)) {
        return problem(file, *pt->get("group"), plugin_prefix + ".group",
                       "group names use letters, digits, '_', '-' and '.' only");
      }
      if (!po.group.empty() && po.isolation == isolation::none) {
        return problem(file, *pt->get("group"), plugin_prefix + ".group",
                       "a group is a shared process, so it needs isolation = \"process\" (this table says \"none\")");
      }
      out.plugin_options[std::string(plugin.str())] = std::move(po);
    }
  }
  if (!s.ok()) return s;
  if (const toml::table* tools = r.table("tools", s)) {
    for (auto&& [tool, value] : *tools) {
      const std::string tool_prefix = cat(prefix, ".tools.", tool.str());
      const toml::table* tt = value.as_table();
      if (tt == nullptr) return problem(file, value, tool_prefix, "expected a table of this tool's settings");
      table_reader tr(file, *tt, tool_prefix);
      tool_settings ts;
      ts.source = where(file, tool.source());
      s = tr.check_keys({"call_timeout_ms"});
      if (s.ok()) s = tr.milliseconds("call_timeout_ms", ts.call_timeout_ms);
      if (!s.ok()) return s;
      out.tools[std::string(tool.str())] = std::move(ts);
    }
  }
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
      settings_origin& origin = out.settings_origins[std::string(plugin.str())];
      origin.table = where(file, value.source());
      record_origins(file, value, "", origin);
    }
  }
  return s;
}

}  // namespace

std::string_view to_string(isolation i) { return i == isolation::process ? "process" : "none"; }

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

const std::string& settings_origin::where(std::string_view path) const {
  for (std::string_view p = path; !p.empty();) {
    if (auto it = values.find(p); it != values.end()) return it->second;
    const size_t cut = p.find_last_of(".[");
    p = p.substr(0, cut == std::string_view::npos ? 0 : cut);
  }
  return table;
}

const server* config::find_server(std::string_view name) const {
  for (const server& s : servers) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const permission_row* config::permission_row_for(const server& s, std::string_view kind) const {
  for (const permission_rows* rows : {&run_permissions, &s.permissions, &permissions}) {
    if (auto it = rows->find(kind); it != rows->end()) return &it->second;
  }
  return nullptr;
}

std::optional<permission> config::permission_for(const server& s, std::string_view kind) const {
  if (const permission_row* row = permission_row_for(s, kind)) return row->value;
  return std::nullopt;
}

std::string config::files() const {
  std::string out = path.empty() ? std::string("the toolhost config") : path;
  for (const auto& o : overlays) append(out, " or ", o);
  return out;
}

uint32_t server::call_timeout_for(std::string_view tool) const {
  if (auto it = tools.find(tool); it != tools.end() && it->second.call_timeout_ms != 0) {
    return it->second.call_timeout_ms;
  }
  return call_timeout_ms;
}

namespace {

// Moves every value of `overlay` into `base`: tables merge, anything else replaces.
void merge(toml::table& base, toml::table& overlay) {
  for (auto&& [k, value] : overlay) {
    const toml::key& key = k;  // a structured binding cannot be captured before C++20 in clang 14
    toml::node* existing = base.get(key.str());
    if (existing != nullptr && existing->is_table() && value.is_table()) {
      merge(*existing->as_table(), *value.as_table());
      continue;
    }
    // Moving keeps each node's source (copies drop it), so errors still name the overlay.
    value.visit([&](auto&& v) { base.insert_or_assign(key, std::move(v)); });
  }
}

absl::StatusOr<toml::table> parse_toml(std::string_view text, const std::string& source) {
  if (absl::Status s = check_nesting(text, source); !s.ok()) return s;
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(cat(where(source, e.source()), ": ", e.description()));
  }
}

}  // namespace

absl::StatusOr<config> parse(std::string_view text, const std::string& source, const std::string& exe_dir) {
  return parse_layers({{source, std::string(text)}}, exe_dir);
}

absl::StatusOr<config> parse_layers(const std::vector<std::pair<std::string, std::string>>& texts,
                                    const std::string& exe_dir) {
  config out;
  toml::table root;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto layer = parse_toml(texts[i].second, texts[i].first);
    if (!layer.ok()) return layer.status();
    if (i == 0) {
      root = *std::move(layer);
    } else {
      merge(root, *layer);
      out.overlays.push_back(texts[i].first);
    }
  }
  const std::string source = texts.empty() ? std::string() : texts.front().first;
  out.path = source;
  out.dir = source.empty() ? fs::current_path().string() : fs::absolute(fs::path(source)).parent_path().string();

  table_reader r(source, root, "");
  absl::Status s = r.check_keys({"plugin_dirs", "default_server", "page_size", "permissions", "servers", "http"});
  if (s.ok()) s = r.strings("plugin_dirs", out.plugin_dirs);
  if (s.ok()) s = r.string("default_server", out.default_server);
  if (s.ok()) s = r.size("page_size", out.page_size, 1, 10000);
  if (s.ok()) s = r.permissions("permissions", out.permissions);
  if (!s.ok()) return s;
  if (const toml::array* dirs = root["plugin_dirs"].as_array()) {
    size_t i = 0;
    for (const toml::node& d : *dirs) {
      out.plugin_dirs[i] = expand_dir(out.plugin_dirs[i], folder_of(d, out.dir), exe_dir);
      ++i;
    }
  }

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
  std::vector<std::string> disabled;  // "NAME (enabled = false at file:line:column)"
  for (server& s : cfg.servers) {
    if (std::find(s.plugins.begin(), s.plugins.end(), plugin) == s.plugins.end()) continue;
    if (!s.enabled) disabled.push_back(cat("'", s.name, "' (enabled = false at ", s.source, ")"));
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
    // A value --set gives is checked like one in the file, and named by the flag.
    settings_origin& origin = s.settings_origins[plugin];
    if (origin.table.empty()) origin.table = s.source;
    std::erase_if(origin.values, [&](const auto& v) {
      const std::string_view p = v.first;
      return p.size() > key.size() && p.substr(0, key.size()) == key && (p[key.size()] == '.' || p[key.size()] == '[');
    });
    origin.values[key] = cat("--set ", spec);
    applied = applied || s.enabled;
  }
  if (!applied && !disabled.empty()) {
    return absl::InvalidArgumentError(cat("'--set ", spec, "' would change nothing: plugin '", plugin,
                                          "' is served only by disabled servers: ", absl::StrJoin(disabled, ", "),
                                          "; set enabled = true there, or in an --overlay file"));
  }
  if (!applied) {
    return absl::InvalidArgumentError(
        cat("no server in the config serves plugin '", plugin, "', so '", spec, "' would change nothing"));
  }
  return absl::OkStatus();
}

absl::Status override_permission(config& cfg, std::string_view kind, permission value, std::string_view flag) {
  if (kind.empty())
    return absl::InvalidArgumentError(cat(flag, " needs a permission kind, like ", flag, " eleven.rename"));
  cfg.run_permissions[std::string(kind)] = permission_row{value, cat(flag, " ", kind)};
  return absl::OkStatus();
}

absl::StatusOr<config> load(const std::string& path, const std::string& exe_dir,
                            const std::vector<std::string>& overlays) {
  std::vector<std::pair<std::string, std::string>> texts;
  texts.emplace_back(path, "");
  for (const auto& o : overlays) texts.emplace_back(o, "");
  for (auto& [file, text] : texts) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      return absl::NotFoundError(cat(file, ": cannot read the configuration file (", std::strerror(errno), ")"));
    }
    std::ostringstream content;
    content << in.rdbuf();
    text = content.str();
  }
  return parse_layers(texts, exe_dir);
}

absl::Status check_nesting(std::string_view text, const std::string& source) {
  int line = 1;
  int column = 0;
  int dots = 0;   // '.' since the last '=', bracket, brace, comma or newline: parts of a dotted key
  int depth = 0;  // open brackets and braces
  auto refuse = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        cat(source, ":", line, ":", column, ": ", what, " (toolhost allows ", kMaxNesting, ")"));
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      dots = 0;
      continue;
    }
    if (c == '#') {  // a comment, to the end of the line
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {  // a string, skipped whole (tripled quotes may span lines)
      const std::string_view quote = text.substr(i, 3) == std::string(3, c) ? text.substr(i, 3) : text.substr(i, 1);
      size_t j = i + quote.size();
      while (j < text.size()) {
        if (c == '"' && text[j] == '\\') {
          j += 2;
          continue;
        }
        if (text[j] == '\n') {
          if (quote.size() == 1) break;  // unterminated: the parser will say so
          ++line;
          column = 0;
        }
        if (text.substr(j, quote.size()) == quote) break;
        ++j;
      }
      column += static_cast<int>(j - i);
      i = std::min(text.size(), j + quote.size()) - 1;
      continue;
    }
    switch (c) {
      case '.':
        if (++dots >= kMaxNesting) return refuse("a dotted key or table header has too many parts");
        break;
      case '[':
      case '{':
        dots = 0;
        if (++depth > kMaxNesting) return refuse("arrays or inline tables nest too deeply");
        break;
      case ']':
      case '}':
        dots = 0;
        if (depth > 0) --depth;
        break;
      case '=':
      case ',': dots = 0; break;
      default: break;
    }
  }
  return absl::OkStatus();
}

discovery discover(const std::string& explicit_path, const std::string& exe_dir) {
  discovery d;
  if (!explicit_path.empty()) {
    d.path = explicit_path;
    d.how = "--config";
    return d;
  }
  if (const char* env = std::getenv("TOOLHOST_CONFIG"); env != nullptr && *env != '\0') {
    d.path = env;
    d.how = "TOOLHOST_CONFIG";
    return d;
  }
  d.looked = {"--config FILE", "$TOOLHOST_CONFIG"};
  // The XDG base directory rules: relative values are ignored.
  std::vector<fs::path> candidates;
  const char* config_home = std::getenv("XDG_CONFIG_HOME");
  if (config_home != nullptr && config_home[0] == '/') {
    candidates.push_back(fs::path(config_home) / "toolhost" / "toolhost.toml");
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    candidates.push_back(fs::path(home) / ".config" / "toolhost" / "toolhost.toml");
  }
  const char* dirs_env = std::getenv("XDG_CONFIG_DIRS");
  const std::string dirs = dirs_env != nullptr && *dirs_env != '\0' ? dirs_env : "/etc/xdg";
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') candidates.push_back(fs::path(dir) / "toolhost" / "toolhost.toml");
    start = end + 1;
  }
  candidates.push_back(fs::path(exe_dir) / ".." / "share" / "toolhost" / "toolhost.toml");
  for (const auto& file : candidates) {
    const std::string name = file.lexically_normal().string();
    d.looked.push_back(name);
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) {
      d.path = name;
      d.how = name;
      return d;
    }
  }
  return d;
}

}  // namespace toolhost::config
