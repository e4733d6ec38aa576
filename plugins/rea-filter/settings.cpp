#include "settings.hpp"

#include "permissions.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <toolhost/sdk/json.hpp>

namespace toolhost::rea_filter {

namespace sdk = toolhost::sdk;
using toolhost::mcp_client::upstream_spec;

namespace {

std::string resolve(std::string_view path, std::string_view base) {
  std::filesystem::path p{std::string(path)};
  if (p.is_relative() && !base.empty()) p = std::filesystem::path(std::string(base)) / p;
  return p.lexically_normal().string();
}

absl::Status string_array(const rapidjson::Value& v, std::string_view what, std::vector<std::string>* out) {
  if (!v.IsArray()) return absl::InvalidArgumentError(std::string(what) + " must be an array of strings");
  for (const auto& item : v.GetArray()) {
    if (!item.IsString()) return absl::InvalidArgumentError(std::string(what) + " must contain only strings");
    out->emplace_back(item.GetString(), item.GetStringLength());
  }
  return absl::OkStatus();
}

absl::Status string_table(const rapidjson::Value& v, std::string_view what, std::map<std::string, std::string>* out) {
  if (!v.IsObject()) return absl::InvalidArgumentError(std::string(what) + " must be a table of strings");
  for (const auto& m : v.GetObject()) {
    if (!m.value.IsString()) {
      return absl::InvalidArgumentError(std::string(what) + "." + m.name.GetString() + " must be a string");
    }
    (*out)[m.name.GetString()] = std::string(m.value.GetString(), m.value.GetStringLength());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::chrono::milliseconds> milliseconds(const rapidjson::Value& v, std::string_view what) {
  if (!v.IsInt64() || v.GetInt64() <= 0) {
    return absl::InvalidArgumentError(std::string(what) + " must be a positive whole number of milliseconds");
  }
  return std::chrono::milliseconds(v.GetInt64());
}

}  // namespace

absl::StatusOr<upstream_spec> read_mcp_servers_config(std::string_view path, std::string_view wanted) {
  std::ifstream in{std::string(path)};
  if (!in) return absl::NotFoundError("cannot read the MCP config " + std::string(path));
  std::stringstream text;
  text << in.rdbuf();
  std::string problem;
  auto doc = sdk::parse_json(text.str(), &problem);
  if (!doc) return absl::InvalidArgumentError("the MCP config " + std::string(path) + " is not JSON: " + problem);
  const rapidjson::Value* servers = sdk::member(*doc, "mcpServers");
  if (servers == nullptr || !servers->IsObject() || servers->MemberCount() == 0) {
    return absl::InvalidArgumentError("the MCP config " + std::string(path) +
                                      " has no \"mcpServers\" object with a server in it");
  }
  const rapidjson::Value* entry = nullptr;
  std::string name;
  if (!wanted.empty()) {
    entry = sdk::member(*servers, wanted);
    name = std::string(wanted);
    if (entry == nullptr) {
      return absl::NotFoundError("the MCP config " + std::string(path) + " has no server named \"" + name + "\"");
    }
  } else if (servers->MemberCount() == 1) {
    entry = &servers->MemberBegin()->value;
    name = servers->MemberBegin()->name.GetString();
  } else {
    std::string names;
    for (const auto& m : servers->GetObject()) names += std::string(names.empty() ? "" : ", ") + m.name.GetString();
    return absl::InvalidArgumentError("the MCP config " + std::string(path) + " names several servers (" + names +
                                      "); choose one with the ida_server setting");
  }
  if (!entry->IsObject())
    return absl::InvalidArgumentError("mcpServers." + name + " in " + std::string(path) + " is not an object");
  upstream_spec spec;
  const std::string where = "mcpServers." + name + " in " + std::string(path);
  if (const rapidjson::Value* url = sdk::member(*entry, "url")) {
    if (!url->IsString()) return absl::InvalidArgumentError(where + ": url must be a string");
    spec.url = url->GetString();
    if (const rapidjson::Value* headers = sdk::member(*entry, "headers")) {
      if (auto s = string_table(*headers, where + ": headers", &spec.headers); !s.ok()) return s;
    }
    return spec;
  }
  const rapidjson::Value* command = sdk::member(*entry, "command");
  if (command == nullptr || !command->IsString() || command->GetStringLength() == 0) {
    return absl::InvalidArgumentError(where + " has neither a command nor a url");
  }
  spec.command.push_back(command->GetString());
  if (const rapidjson::Value* args = sdk::member(*entry, "args")) {
    if (auto s = string_array(*args, where + ": args", &spec.command); !s.ok()) return s;
  }
  if (const rapidjson::Value* env = sdk::member(*entry, "env")) {
    if (auto s = string_table(*env, where + ": env", &spec.env); !s.ok()) return s;
  }
  if (const rapidjson::Value* cwd = sdk::member(*entry, "cwd"); cwd != nullptr && cwd->IsString()) {
    spec.cwd = cwd->GetString();
  }
  return spec;
}

absl::StatusOr<proxy_settings> parse_settings(const rapidjson::Value& settings, const settings_context& context) {
  if (!settings.IsObject()) return absl::InvalidArgumentError("the rea-filter settings must be a table");
  static const rapidjson::Document kSchema = *sdk::parse_json(kSettingsSchema);
  const rapidjson::Value& known = kSchema["properties"];
  for (const auto& m : settings.GetObject()) {
    if (sdk::member(known, sdk::as_view(m.name)) != nullptr) continue;
    std::string names;
    for (const auto& k : known.GetObject()) names += std::string(names.empty() ? "" : ", ") + k.name.GetString();
    return absl::InvalidArgumentError(std::string("unknown rea-filter setting '") + m.name.GetString() +
                                      "' (known: " + names + ")");
  }
  proxy_settings out;

  // The filter: a preset, then the configured denials on top.
  std::string preset = context.server_name == "eleven-rea" ? "eleven-rea" : "none";
  if (const rapidjson::Value* f = sdk::member(settings, "filter")) {
    if (!f->IsString()) return absl::InvalidArgumentError("filter must be \"eleven-rea\" or \"none\"");
    preset = f->GetString();
  }
  if (preset == "eleven-rea") {
    out.filter = tool_filter::eleven_rea();
  } else if (preset != "none") {
    return absl::InvalidArgumentError("filter must be \"eleven-rea\" or \"none\", not \"" + preset + "\"");
  }
  std::map<std::string, std::string> instead;
  if (const rapidjson::Value* u = sdk::member(settings, "use_instead")) {
    if (auto s = string_table(*u, "use_instead", &instead); !s.ok()) return s;
  }
  std::vector<std::string> deny;
  if (const rapidjson::Value* d = sdk::member(settings, "deny")) {
    if (auto s = string_array(*d, "deny", &deny); !s.ok()) return s;
  }
  for (const auto& name : deny) {
    auto it = instead.find(name);
    out.filter.deny(name, it != instead.end() ? it->second : "");
  }
  for (const auto& [name, text] : instead) {
    if (std::find(deny.begin(), deny.end(), name) != deny.end()) continue;
    if (!out.filter.denies(name)) {
      return absl::InvalidArgumentError("use_instead names " + name + ", which is not in deny");
    }
    out.filter.deny(name, text);  // a new message for a preset's tool
  }

  if (const rapidjson::Value* t = sdk::member(settings, "timeout_ms")) {
    auto ms = milliseconds(*t, "timeout_ms");
    if (!ms.ok()) return ms.status();
    out.timeout = *ms;
  }
  if (const rapidjson::Value* t = sdk::member(settings, "start_timeout_ms")) {
    auto ms = milliseconds(*t, "start_timeout_ms");
    if (!ms.ok()) return ms.status();
    out.start_timeout = *ms;
  }

  if (const rapidjson::Value* t = sdk::member(settings, "instructions_wait_ms")) {
    if (!t->IsInt64() || t->GetInt64() < 0) {
      return absl::InvalidArgumentError("instructions_wait_ms must be a whole number of milliseconds, 0 or more");
    }
    out.instructions_wait = std::chrono::milliseconds(t->GetInt64());
  }

  // The upstream: a command or URL here, else an MCP JSON config, else REA itself.
  const rapidjson::Value* command = sdk::member(settings, "command");
  const rapidjson::Value* url = sdk::member(settings, "url");
  const rapidjson::Value* ida_config = sdk::member(settings, "ida_config");
  std::string ida_server;
  if (const rapidjson::Value* s = sdk::member(settings, "ida_server")) {
    if (!s->IsString()) return absl::InvalidArgumentError("ida_server must be a string");
    ida_server = s->GetString();
  }
  if (command != nullptr && url != nullptr) return absl::InvalidArgumentError("give either command or url, not both");
  if (command != nullptr) {
    if (command->IsString()) {
      return absl::InvalidArgumentError(
          "command must be an array of strings, like [\"npx\", \"-y\", \"rea-agents\", \"mcp\"]");
    }
    if (auto s = string_array(*command, "command", &out.upstream.command); !s.ok()) return s;
    if (out.upstream.command.empty() || out.upstream.command.front().empty()) {
      return absl::InvalidArgumentError("command must name a program to run");
    }
  } else if (url != nullptr) {
    if (!url->IsString() || url->GetStringLength() == 0)
      return absl::InvalidArgumentError("url must be a non-empty string");
    out.upstream.url = url->GetString();
  } else if (ida_config != nullptr) {
    if (!ida_config->IsString()) return absl::InvalidArgumentError("ida_config must be a path");
    auto spec = read_mcp_servers_config(resolve(ida_config->GetString(), context.config_dir), ida_server);
    if (!spec.ok()) return spec.status();
    out.upstream = std::move(*spec);
  } else if (context.server_name == "ida") {
    if (context.ida_config_env.empty()) {
      return absl::FailedPreconditionError(
          "the ida server needs your IDA MCP plugin's JSON config: set REA_IDA_MCP_CONFIG to its path, or "
          "ida_config in [servers.ida.settings.rea-filter]");
    }
    auto spec = read_mcp_servers_config(context.ida_config_env, ida_server);
    if (!spec.ok()) return spec.status();
    out.upstream = std::move(*spec);
  } else if (preset == "eleven-rea") {
    for (const char* a : kReaCommand) out.upstream.command.emplace_back(a);
  } else {
    return absl::InvalidArgumentError(
        "no upstream MCP server: set command = [\"program\", \"arg\", ...] or url in [servers." + context.server_name +
        ".settings.rea-filter]");
  }
  if (const rapidjson::Value* env = sdk::member(settings, "env")) {
    if (auto s = string_table(*env, "env", &out.upstream.env); !s.ok()) return s;
  }
  if (const rapidjson::Value* headers = sdk::member(settings, "headers")) {
    if (auto s = string_table(*headers, "headers", &out.upstream.headers); !s.ok()) return s;
  }
  if (const rapidjson::Value* cwd = sdk::member(settings, "cwd")) {
    if (!cwd->IsString()) return absl::InvalidArgumentError("cwd must be a path");
    out.upstream.cwd = resolve(cwd->GetString(), context.config_dir);
  }
  if (preset == "eleven-rea" || context.server_name == "ida" || ida_config != nullptr) {
    out.read_label = kReadLabel;
  } else {
    std::string upstream = out.upstream.describe();
    if (upstream.size() > 80) upstream = upstream.substr(0, 79) + "…";
    out.read_label = "Read-only tools of the " + context.server_name + " server (" + upstream + ")";
  }
  return out;
}

}  // namespace toolhost::rea_filter
