#include "host/policy/approval.hpp"

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

namespace toolhost::policy {

std::string approval_schema(std::string_view label) {
  return cat(R"({"type":"object","properties":{"approve":{"type":"boolean","title":"Allow",)",
             R"("description":)", sdk::quote(cat("Permission: ", label)), R"(,"default":false}},"required":["approve"]})");
}

std::string approval_request(std::string_view message, std::string_view schema_json) {
  return cat(R"({"mode":"form","message":)", sdk::quote(message), R"(,"requestedSchema":)", schema_json, "}");
}

answer read_approval(bool ok, std::string_view result_json) {
  answer a{"cancel", false};
  if (!ok) return a;
  auto doc = sdk::parse_json(result_json);
  if (!doc || !doc->IsObject()) return a;
  a.action = std::string(sdk::string_member(*doc, "action").value_or("cancel"));
  const rapidjson::Value* content = sdk::member(*doc, "content");
  const rapidjson::Value* approve = content != nullptr && content->IsObject() ? sdk::member(*content, "approve") : nullptr;
  a.approved = a.action == "accept" && approve != nullptr && approve->IsBool() && approve->GetBool();
  return a;
}

}  // namespace toolhost::policy
