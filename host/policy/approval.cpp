#include "host/policy/approval.hpp"

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

namespace toolhost::policy {

std::string approval_schema(std::string_view label, bool offer_session) {
  std::string schema = cat(R"({"type":"object","properties":{"approve":{"type":"boolean","title":"Allow",)",
                           R"("description":)", sdk::quote(cat("Permission: ", label)), R"(,"default":false})");
  if (offer_session) {
    append(schema, R"(,"for_session":{"type":"boolean","title":"Allow for this session","description":)",
           sdk::quote(cat("Do not ask again for \"", label, "\" until this client disconnects")),
           R"(,"default":false})");
  }
  schema += R"(},"required":["approve"]})";
  return schema;
}

namespace {

// One argument's value as the person reads it: strings bare, the rest as JSON; at most `limit`.
std::string shown(const rapidjson::Value& v, size_t limit) {
  std::string text = v.IsString() ? std::string(sdk::as_view(v)) : sdk::to_json(v);
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (text.size() > limit) {
    size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    text = text.substr(0, cut) + "\u2026";
  }
  return text;
}

}  // namespace

std::string describe_call(std::string_view tool, std::string_view arguments_json) {
  std::string out(tool);
  auto doc = sdk::parse_json(arguments_json);
  if (!doc || !doc->IsObject() || doc->MemberCount() == 0) return out;
  constexpr size_t kValue = 60;
  constexpr size_t kTotal = 300;
  // A rename's two halves read as one change: the only new_* string and the only other string.
  const rapidjson::Value* renamed = nullptr;
  const rapidjson::Value* from = nullptr;
  int new_count = 0, other_strings = 0;
  for (const auto& m : doc->GetObject()) {
    if (!m.value.IsString()) continue;
    if (sdk::as_view(m.name).rfind("new_", 0) == 0) {
      renamed = &m.value;
      ++new_count;
    } else {
      from = &m.value;
      ++other_strings;
    }
  }
  const bool arrow = new_count == 1 && other_strings == 1;
  if (arrow) append(out, " ", shown(*from, kValue), " \u2192 ", shown(*renamed, kValue));
  bool first = !arrow;
  for (const auto& m : doc->GetObject()) {
    if (arrow && m.value.IsString()) continue;
    append(out, first ? " " : ", ", sdk::as_view(m.name), ": ", shown(m.value, kValue));
    first = false;
    if (out.size() > kTotal) return out.substr(0, kTotal) + "\u2026";
  }
  return out;
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
  const rapidjson::Value* approve =
      content != nullptr && content->IsObject() ? sdk::member(*content, "approve") : nullptr;
  a.approved = a.action == "accept" && approve != nullptr && approve->IsBool() && approve->GetBool();
  const rapidjson::Value* session = a.approved ? sdk::member(*content, "for_session") : nullptr;
  a.for_session = session != nullptr && session->IsBool() && session->GetBool();
  return a;
}

}  // namespace toolhost::policy
