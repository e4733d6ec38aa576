#include "permissions.hpp"

#include <array>

#include <toolhost/sdk/json.hpp>

namespace toolhost::rea_filter {

bool is_read_only(std::string_view name, const rapidjson::Value* annotations) {
  static constexpr std::array<std::string_view, 3> kExact = {"open_binary", "binary_overview", "xrefs"};
  static constexpr std::array<std::string_view, 9> kPrefixes = {
      "list_", "procedure_", "read_", "search_", "inspect_", "get_", "find_", "analyze_", "compare_"};
  for (auto e : kExact) {
    if (name == e) return true;
  }
  for (auto p : kPrefixes) {
    if (name.size() > p.size() && name.substr(0, p.size()) == p) return true;
  }
  if (annotations != nullptr) {
    const rapidjson::Value* hint = toolhost::sdk::member(*annotations, "readOnlyHint");
    if (hint != nullptr && hint->IsBool() && hint->GetBool()) return true;
  }
  return false;
}

}  // namespace toolhost::rea_filter
