#include <toolhost/mcp_client/tool_headers.hpp>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

namespace toolhost::mcp_client {

read_tools read_tool_annotations(std::vector<std::string> tools) {
  read_tools out;
  for (std::string& text : tools) {
    auto tool = sdk::parse_json(text);
    const rapidjson::Value* schema = tool ? sdk::member(*tool, "inputSchema") : nullptr;
    if (schema != nullptr) {
      const std::string name(sdk::string_member(*tool, "name").value_or(""));
      auto found = sdk::param_headers::annotations_of(*schema);
      if (!found.ok()) {
        out.refused.push_back(
            cat("leaving the upstream tool '", name, "' out: ", found.status().message(),
                " (2026-07-28 over HTTP, a client must not offer a tool with an invalid x-mcp-header)"));
        continue;
      }
      if (!found->empty()) out.annotations[name] = *std::move(found);
    }
    out.kept.push_back(std::move(text));
  }
  return out;
}

}  // namespace toolhost::mcp_client
