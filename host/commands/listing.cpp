// `toolhost plugins` and `toolhost tools`: what the plugin folders hold and what an agent gets.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <absl/strings/str_join.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

#include "host/commands/commands.hpp"
#include "host/commands/setup.hpp"
#include "host/mcp/server.hpp"
#include "host/plugins/isolation/placement.hpp"
#include "host/plugins/loader.hpp"
#include "host/transport/stdio.hpp"

namespace toolhost::commands {
namespace {

// A text table: columns as wide as their widest cell, the last one free; cells longer than
// `max_cell` are cut with "..." so that a row fits a terminal.
class table {
 public:
  explicit table(std::vector<std::string> header, size_t max_cell = 48) : max_cell_(max_cell) {
    rows_.push_back(std::move(header));
  }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t size() const { return rows_.size() - 1; }
  std::string text() const {
    std::vector<size_t> width(rows_.front().size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i + 1 < r.size(); ++i) width[i] = std::max(width[i], std::min(r[i].size(), max_cell_));
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        const bool last = i + 1 == r.size();
        std::string cell = r[i];
        const size_t limit = last ? 2 * max_cell_ : max_cell_;
        if (cell.size() > limit) cell = cell.substr(0, limit - 3) + "...";
        line += cell;
        if (!last) line += std::string(width[i] - cell.size() + 2, ' ');
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  size_t max_cell_;
  std::vector<std::vector<std::string>> rows_;
};

std::string first_sentence(std::string_view text) {
  const size_t end = text.find(". ");
  std::string s(text.substr(0, end == std::string_view::npos ? text.size() : end + 1));
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

void write_strings(json_writer& w, const char* key, const std::vector<std::string>& items) {
  w.Key(key);
  w.StartArray();
  for (const auto& i : items) w.String(i.c_str(), static_cast<rapidjson::SizeType>(i.size()));
  w.EndArray();
}

// The libraries `toolhost plugins` shows: the server's plugins in its order, or every file.
std::vector<plugins::library*> shown_libraries(plugins::loader& loader, const config::server* server,
                                               std::vector<std::string>& missing) {
  std::vector<plugins::library*> out;
  if (server == nullptr) {
    loader.load_all();
    for (const auto& lib : loader.libraries()) out.push_back(lib.get());
    return out;
  }
  for (const auto& id : server->plugins) {
    if (plugins::library* lib = loader.find(id)) {
      out.push_back(lib);
    } else {
      missing.push_back(id);
    }
  }
  return out;
}

}  // namespace

int plugins(const cli::options& o) {
  // Plugins may print while they load: the table goes to the real stdout, their noise to stderr.
  const int out_fd = transport::take_stdout();
  auto cfg = load_config(o, /*need_config=*/false);
  if (!cfg) return 2;
  const config::server* chosen = nullptr;
  if (!o.server.empty()) {
    chosen = cfg->find_server(o.server);
    if (chosen == nullptr) {
      chosen = choose_server(*cfg, o.server);  // prints why, with the servers there are
      return 2;
    }
  }
  plugins::loader loader(cfg->plugin_dirs);
  std::vector<std::string> missing;
  std::vector<plugins::library*> libs = shown_libraries(loader, chosen, missing);
  config::server everything;
  everything.name = "(all plugins)";
  everything.source = "the command line";
  for (const auto* lib : libs) {
    if (lib->status == plugins::load_status::loaded && !lib->id.empty()) everything.plugins.push_back(lib->id);
  }
  // Listing mode (TOOLHOST_HOST_LISTING): plugins register, but start nothing (no upstreams).
  config::server shown = chosen != nullptr ? *chosen : everything;
  shown.listing = true;
  mcp::server srv(*cfg, shown, loader);
  srv.load_now();

  auto owned = [&](const std::string& owner, const auto& items, auto name_of) {
    std::vector<std::string> names;
    for (const auto& item : items) {
      if (item.owner == owner) names.push_back(name_of(item));
    }
    return names;
  };
  std::vector<std::string> problems;
  for (const auto* lib : libs) {
    if (lib->status != plugins::load_status::loaded) problems.push_back(lib->message);
  }
  for (const auto& id : missing) {
    problems.push_back(
        cat("plugin '", id, "' of server '", chosen->name, "' is not in ", absl::StrJoin(cfg->plugin_dirs, ", ")));
  }

  // Where each plugin runs, and how often its process died during this listing.
  auto isolation_of = [&](const std::string& id) {
    const auto where = plugins::isolation::place(shown, id);
    uint32_t crashes = 0;
    for (const auto& g : srv.groups()) {
      if (std::find(g->plugins().begin(), g->plugins().end(), id) != g->plugins().end())
        crashes = g->process().crashes();
    }
    return std::make_tuple(where, crashes);
  };
  auto transports_of = [&](const std::string& id) {
    auto names = owned(id, srv.registry().transports(), [](const auto& t) { return t.kind + ":" + t.name; });
    for (const auto& g : srv.groups()) {
      for (auto& t : owned(id, g->transports(), [](const auto& t) { return t.kind + ":" + t.name; })) {
        names.push_back(std::move(t));
      }
    }
    return names;
  };

  std::string text;
  if (o.json) {
    rapidjson::StringBuffer buffer;
    json_writer w(buffer);
    w.StartObject();
    w.Key("plugins");
    w.StartArray();
    for (const auto* lib : libs) {
      w.StartObject();
      w.Key("id");
      w.String(lib->id.c_str());
      w.Key("file");
      w.String(lib->path.c_str());
      w.Key("version");
      w.String(lib->version.c_str());
      w.Key("abi");
      w.String(lib->entry != nullptr ? cat(lib->abi_major, ".", lib->abi_minor).c_str() : "");
      w.Key("status");
      w.String(std::string(plugins::to_string(lib->status)).c_str());
      if (lib->status != plugins::load_status::loaded) {
        w.Key("problem");
        w.String(lib->message.c_str());
      }
      write_strings(w, "tools", owned(lib->id, srv.registry().tools(), [](const auto& t) { return t.name; }));
      w.Key("providesTools");
      w.Bool(std::any_of(srv.registry().providers().begin(), srv.registry().providers().end(),
                         [&](const auto& p) { return p.owner == lib->id; }));
      w.Key("permissionKinds");
      w.StartArray();
      for (const auto& k : srv.registry().kinds()) {
        if (k.owner != lib->id) continue;
        w.StartObject();
        w.Key("id");
        w.String(k.id.c_str());
        w.Key("label");
        w.String(k.label.c_str());
        w.Key("default");
        w.String(std::string(config::to_string(k.default_value)).c_str());
        w.EndObject();
      }
      w.EndArray();
      write_strings(w, "transports", transports_of(lib->id));
      const auto [where, crashes] = isolation_of(lib->id);
      w.Key("isolation");
      w.String(std::string(config::to_string(where.isolation)).c_str());
      if (where.isolation == config::isolation::process) {
        w.Key("group");
        w.String(where.group.c_str());
        w.Key("crashes");
        w.Uint(crashes);
      }
      w.EndObject();
    }
    w.EndArray();
    write_strings(w, "problems", problems);
    w.EndObject();
    text = std::string(buffer.GetString(), buffer.GetSize()) + "\n";
  } else {
    table plugins_table({"PLUGIN", "VERSION", "ABI", "STATUS", "ISOLATION", "TOOLS", "TRANSPORTS"});
    table kinds_table({"PERMISSION KIND", "DEFAULT", "PLUGIN", "LABEL"});
    for (const auto* lib : libs) {
      const auto tools = owned(lib->id, srv.registry().tools(), [](const auto& t) { return t.name; });
      const bool dynamic = std::any_of(srv.registry().providers().begin(), srv.registry().providers().end(),
                                       [&](const auto& p) { return p.owner == lib->id; });
      std::string tool_cell = tools.empty() ? "-" : cat(tools.size());
      if (dynamic)
        tool_cell = tools.empty() ? "dynamic" : tool_cell + " + dynamic";  // a provider lists more at run time
      const auto transports = transports_of(lib->id);
      const auto [where, crashes] = isolation_of(lib->id);
      std::string isolation_cell(config::to_string(where.isolation));
      if (where.isolation == config::isolation::process && where.group != lib->id) {
        append(isolation_cell, " (group ", where.group, ")");
      }
      if (crashes > 0) append(isolation_cell, ", ", crashes, crashes == 1 ? " crash" : " crashes");
      plugins_table.add({lib->id.empty() ? std::filesystem::path(lib->path).filename().string() : lib->id,
                         lib->version.empty() ? "-" : lib->version,
                         lib->entry != nullptr ? cat(lib->abi_major, ".", lib->abi_minor) : "-",
                         std::string(plugins::to_string(lib->status)), isolation_cell, tool_cell,
                         transports.empty() ? "-" : absl::StrJoin(transports, ", ")});
      for (const auto& k : srv.registry().kinds()) {
        if (k.owner == lib->id) {
          kinds_table.add({k.id, std::string(config::to_string(k.default_value)), k.owner, k.label});
        }
      }
    }
    text = plugins_table.text();
    if (libs.empty()) text += cat("(no plugins found in ", absl::StrJoin(cfg->plugin_dirs, ", "), ")\n");
    if (kinds_table.size() > 0) text += "\n" + kinds_table.text();
    if (!problems.empty()) {
      text += "\nProblems:\n";
      for (const auto& p : problems) text += "  " + p + "\n";
    }
    if (!libs.empty()) {
      text += cat("\n`toolhost tools --server NAME` lists each tool; `--json` prints all of this as JSON.\n");
    }
  }
  emit(out_fd, text);
  srv.shutdown();
  std::_Exit(0);
}

int tools(const cli::options& o) {
  const int out_fd = transport::take_stdout();
  auto cfg = load_config(o);
  if (!cfg) return 2;
  const config::server* chosen = choose_server(*cfg, o.server);
  if (chosen == nullptr) return 2;
  plugins::loader loader(cfg->plugin_dirs);
  mcp::server srv(*cfg, *chosen, loader);
  srv.set_serves_alone(true);
  srv.load_now();
  for (const auto& p : srv.config_problems()) fail(cat(p.error ? "" : "warning: ", p.message));

  struct listed {
    std::string name, plugin, kind, listing;
  };
  std::vector<listed> items;
  for (auto& [name, listing] : srv.catalog().tools()) {  // what tools/list gives an agent
    auto target = srv.catalog().find_tool(name);
    if (!target) continue;
    items.push_back({name, target->tool != nullptr ? target->tool->owner : target->provider->owner,
                     target->permission_kind, listing});
  }
  auto setting_of = [&](const std::string& kind_id) {
    const plugins::permission_kind* kind = srv.registry().find_kind(kind_id);
    if (kind == nullptr) kind = srv.registry().find_kind(plugins::kRunKind);
    return std::string(config::to_string(srv.permission_of(*kind)));
  };

  std::string text;
  if (o.json) {
    rapidjson::StringBuffer buffer;
    json_writer w(buffer);
    w.StartObject();
    w.Key("server");
    w.String(chosen->name.c_str());
    w.Key("tools");
    w.StartArray();
    for (const auto& item : items) {
      w.StartObject();
      w.Key("name");
      w.String(item.name.c_str());
      w.Key("plugin");
      w.String(item.plugin.c_str());
      w.Key("permissionKind");
      w.String(item.kind.c_str());
      w.Key("permission");
      w.String(setting_of(item.kind).c_str());
      w.Key("tool");
      w.RawValue(item.listing.c_str(), item.listing.size(), rapidjson::kObjectType);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    text = std::string(buffer.GetString(), buffer.GetSize()) + "\n";
  } else {
    table t({"TOOL", "PLUGIN", "PERMISSION", "DESCRIPTION"}, 40);
    for (const auto& item : items) {
      auto doc = sdk::parse_json(item.listing);
      const std::string description(doc ? sdk::string_member(*doc, "description").value_or("") : "");
      t.add({item.name, item.plugin, cat(item.kind, " (", setting_of(item.kind), ")"), first_sentence(description)});
    }
    text = t.text();
    if (items.empty()) text += cat("(server '", chosen->name, "' has no tools)\n");
  }
  emit(out_fd, text);
  const bool failed = !srv.plugins_not_started().empty() || !srv.config_error().empty();
  srv.shutdown();
  std::_Exit(failed ? 1 : 0);
}

}  // namespace toolhost::commands
