#include "host/plugins/settings_check.hpp"

#include <string>

#include <absl/strings/str_join.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/schema_check.hpp>
#include <toolhost/sdk/strings.hpp>

namespace toolhost::plugins {
namespace {

// The names a schema's properties declare at `path` ("" for the top), for the message that
// names an unknown key.
std::string declared_names(const rapidjson::Value& schema, std::string_view path) {
  const rapidjson::Value* at = &schema;
  for (std::string_view rest = path; at != nullptr && !rest.empty();) {
    const size_t cut = rest.find_first_of(".[");
    const std::string_view part = rest.substr(0, cut);
    const rapidjson::Value* properties = sdk::member(*at, "properties");
    at = properties != nullptr ? sdk::member(*properties, part) : nullptr;
    if (cut == std::string_view::npos) break;
    rest = rest.substr(cut);
    if (rest.front() == '[') {  // an array item: its schema is the array's items
      rest = rest.substr(std::min(rest.find(']') + 1, rest.size()));
      at = at != nullptr ? sdk::member(*at, "items") : nullptr;
    }
    if (!rest.empty() && rest.front() == '.') rest.remove_prefix(1);
  }
  std::vector<std::string> names;
  if (at != nullptr) {
    if (const rapidjson::Value* properties = sdk::member(*at, "properties"); properties && properties->IsObject()) {
      for (const auto& m : properties->GetObject()) names.emplace_back(sdk::as_view(m.name));
    }
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

}  // namespace

absl::Status check_settings(std::string_view schema_json, std::string_view settings_json,
                            const config::settings_origin& origin, const settings_subject& who) {
  auto schema = sdk::parse_json(schema_json);
  if (!schema || !schema->IsObject()) {
    return absl::InvalidArgumentError(
        cat("its settings schema is not a JSON object; the plugin is broken, "
            "report this to its author"));
  }
  auto settings = sdk::parse_json(settings_json);
  if (!settings || !settings->IsObject()) settings.emplace().SetObject();
  if (who.listing && settings->ObjectEmpty()) return absl::OkStatus();

  sdk::schema_rules rules;
  rules.closed_by_default = true;
  rules.ranges = true;
  auto problem = sdk::check_schema(*schema, *settings, rules);
  if (!problem) return absl::OkStatus();

  using kind = sdk::schema_problem::kind;
  const std::string table = cat("servers.", who.server, ".settings.", who.plugin);
  const std::string key = problem->path.empty() ? table : cat(table, ".", problem->path);
  if (problem->is == kind::unknown) {
    const size_t cut = problem->path.find_last_of(".[");
    const std::string_view parent =
        cut == std::string::npos ? std::string_view() : std::string_view(problem->path).substr(0, cut);
    return absl::InvalidArgumentError(cat(
        origin.where(problem->path), ": ", key, ": ", who.plugin, " has no such setting (",
        parent.empty() ? "its settings" : cat("settings under ", parent), ": ", declared_names(*schema, parent), ")"));
  }
  if (problem->is == kind::required) {
    // Nothing was written for it: name the table that lacks it.
    const size_t cut = problem->path.find_last_of(".[");
    const std::string parent = cut == std::string::npos ? std::string() : problem->path.substr(0, cut);
    return absl::InvalidArgumentError(cat(origin.where(parent), ": ", key, ": ", problem->what));
  }
  return absl::InvalidArgumentError(cat(origin.where(problem->path), ": ", key, ": ", problem->what));
}

}  // namespace toolhost::plugins
