#include "schemas.hpp"

#include <toolhost/sdk/json.hpp>

namespace toolhost::analysis_server::schema {
namespace {

std::string with_description(std::string body, std::string_view description) {
  if (!description.empty()) body += R"(,"description":)" + sdk::quote(description);
  return "{" + body + "}";
}

}  // namespace

std::string object(std::initializer_list<property> properties, std::initializer_list<std::string_view> required,
                   bool closed) {
  return object(std::span<const property>(properties.begin(), properties.size()),
                std::span<const std::string_view>(required.begin(), required.size()), closed);
}

std::string object(std::span<const property> properties, std::span<const std::string_view> required, bool closed) {
  std::string out = R"({"type":"object","properties":{)";
  bool first = true;
  for (const auto& [name, s] : properties) {
    if (!first) out += ',';
    first = false;
    out += sdk::quote(name) + ":" + s;
  }
  out += "}";
  if (required.size() != 0) {
    out += R"(,"required":[)";
    first = true;
    for (std::string_view r : required) {
      if (!first) out += ',';
      first = false;
      out += sdk::quote(r);
    }
    out += "]";
  }
  if (closed) out += R"(,"additionalProperties":false)";
  return out + "}";
}

std::string array(const std::string& items) { return R"({"type":"array","items":)" + items + "}"; }
std::string nullable(const std::string& s) { return R"({"anyOf":[)" + s + R"(,{"type":"null"}]})"; }

std::string one_of(std::initializer_list<std::string> options) {
  std::string out = R"({"oneOf":[)";
  bool first = true;
  for (const auto& o : options) {
    if (!first) out += ',';
    first = false;
    out += o;
  }
  return out + "]}";
}

std::string text(std::string_view description) { return with_description(R"("type":"string")", description); }
std::string integer(std::string_view description) {
  return with_description(R"("type":"integer","minimum":0)", description);
}
std::string flag(std::string_view description) { return with_description(R"("type":"boolean")", description); }
std::string constant(std::string_view json_value) { return R"({"const":)" + std::string(json_value) + "}"; }

std::string enumeration(std::initializer_list<std::string_view> values, std::string_view description) {
  std::string body = R"("type":"string","enum":[)";
  bool first = true;
  for (std::string_view v : values) {
    if (!first) body += ',';
    first = false;
    body += sdk::quote(v);
  }
  return with_description(body + "]", description);
}

std::string ranged(int64_t low, int64_t high, int64_t fallback, std::string_view description) {
  return with_description(R"("type":"integer","minimum":)" + std::to_string(low) + R"(,"maximum":)" +
                              std::to_string(high) + R"(,"default":)" + std::to_string(fallback),
                          description);
}

std::string document_argument() {
  return text("The document (list_documents) to read; default: the binary opened last");
}
std::string procedure_argument() {
  return text("The procedure: its name (a symbol, an import's name, FUN_<hex>) or an address inside it, like 0x401136");
}
std::string address_argument() { return text("A hexadecimal address, like 0x401136"); }
std::string offset_argument() {
  return ranged(0, 9007199254740991, 0, "Index of the first item to return (next_offset of the page before)");
}
std::string limit_argument(int64_t fallback, int64_t high) {
  return ranged(1, high, fallback, "How many items to return at most");
}

std::string page(const std::string& item) {
  return object({{"items", array(item)},
                 {"offset", integer()},
                 {"limit", integer()},
                 {"total", integer()},
                 {"next_offset", nullable(integer())},
                 {"has_more", flag()}},
                {"items", "offset", "limit", "total", "next_offset", "has_more"});
}

std::string bounded(const std::string& item) {
  return object({{"items", array(item)},
                 {"total", nullable(integer())},
                 {"returned", integer()},
                 {"truncated", flag()},
                 {"next_offset", nullable(integer())}},
                {"items", "total", "returned", "truncated", "next_offset"});
}

std::string classification() {
  return nullable(
      object({{"external", flag()}, {"thunk", flag()}, {"thunk_target", nullable(text())}, {"provenance", text()}},
             {"external", "thunk", "thunk_target", "provenance"}));
}

std::string identity() {
  return object({{"address", text()}, {"name", text()}, {"classification", classification()}},
                {"address", "name", "classification"});
}

std::string reference_edge() {
  const std::string available =
      object({{"available", constant("true")},
              {"provenance", text()},
              {"type", text()},
              {"flow", flag()},
              {"call", flag()},
              {"jump", flag()},
              {"data", flag()},
              {"read", flag()},
              {"write", flag()},
              {"indirect", flag()},
              {"computed", flag()},
              {"conditional", flag()},
              {"terminal", flag()},
              {"primary", flag()},
              {"operand_index", R"({"type":"integer"})"},
              {"external", flag()}},
             {"available", "provenance", "type", "flow", "call", "jump", "data", "read", "write", "indirect",
              "computed", "conditional", "terminal", "primary", "operand_index", "external"});
  return object({{"source_address", text()},
                 {"target_address", text()},
                 {"source_procedure", nullable(identity())},
                 {"target_procedure", nullable(identity())},
                 {"kind", available}},
                {"source_address", "target_address", "source_procedure", "target_procedure", "kind"});
}

std::string containing() {
  return one_of({object({{"query_address", text()}, {"found", constant("true")}, {"procedure", identity()}},
                        {"query_address", "found", "procedure"}),
                 object({{"query_address", text()},
                         {"found", constant("false")},
                         {"procedure", R"({"type":"null"})"},
                         {"reason", enumeration({"outside_segments", "not_in_procedure"})}},
                        {"query_address", "found", "procedure", "reason"})});
}

std::string address_list() { return array(text()); }

std::string envelope(const std::string& result, bool with_evidence) {
  if (!with_evidence) return object({{"result", result}}, {"result"});
  return object({{"result", result},
                 {"evidence_id", R"({"type":"string","pattern":"^ev_[a-f0-9]{64}$"})"},
                 {"evidence_uri", R"({"type":"string","pattern":"^rea://evidence/ev_[a-f0-9]{64}$"})"}},
                {"result", "evidence_id", "evidence_uri"});
}

}  // namespace toolhost::analysis_server::schema
