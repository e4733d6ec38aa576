#include "host/mcp/param_headers.hpp"

#include <absl/status/status.h>
#include <absl/strings/ascii.h>
#include <absl/strings/escaping.h>
#include <absl/strings/str_join.h>
#include <toolhost/sdk/strings.hpp>

#include <cmath>
#include <cstdlib>
#include <set>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp::param_headers {
namespace {

constexpr std::string_view kMember = "x-mcp-header";
constexpr std::string_view kPrefix = "=?base64?";
constexpr std::string_view kSuffix = "?=";
constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1: what a JavaScript client holds exactly

// RFC 9110's tchar: what a header field name may be made of.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c)) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) == std::string_view::npos) return false;
  }
  return true;
}

// How many x-mcp-header members the schema holds anywhere.
size_t count_members(const rapidjson::Value& v) {
  size_t n = 0;
  if (v.IsObject()) {
    for (const auto& m : v.GetObject()) {
      if (sdk::as_view(m.name) == kMember) ++n;
      n += count_members(m.value);
    }
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray()) n += count_members(item);
  }
  return n;
}

// The annotations reachable from `schema` through `properties` alone.
absl::Status collect(const rapidjson::Value& schema, std::vector<std::string>& path, std::vector<annotation>& out) {
  const rapidjson::Value* properties = sdk::member(schema, "properties");
  if (properties == nullptr || !properties->IsObject()) return absl::OkStatus();
  for (const auto& p : properties->GetObject()) {
    if (!p.value.IsObject()) continue;
    path.emplace_back(sdk::as_view(p.name));
    if (const rapidjson::Value* header = sdk::member(p.value, kMember)) {
      const std::string where = absl::StrJoin(path, ".");
      if (!header->IsString() || !is_token(sdk::as_view(*header))) {
        return absl::InvalidArgumentError(
            cat("the x-mcp-header of '", where, "' is not a header name (letters, digits and !#$%&'*+-.^_`|~)"));
      }
      const std::string type(sdk::string_member(p.value, "type").value_or(""));
      if (type != "string" && type != "integer" && type != "boolean") {
        return absl::InvalidArgumentError(cat("the x-mcp-header of '", where, "' is on a parameter of type '", type,
                                              "'; only string, integer and boolean parameters may have one"));
      }
      out.push_back({std::string(sdk::as_view(*header)), path, type});
    }
    if (absl::Status s = collect(p.value, path, out); !s.ok()) return s;
    path.pop_back();
  }
  return absl::OkStatus();
}

// The argument at `path`, or null when it is absent.
const rapidjson::Value* value_at(const rapidjson::Value* arguments, const std::vector<std::string>& path) {
  const rapidjson::Value* v = arguments;
  for (const auto& key : path) {
    if (v == nullptr || !v->IsObject()) return nullptr;
    v = sdk::member(*v, key);
  }
  return v;
}

bool canonical_base64(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0) return false;
  const size_t padding = s.size() - s.find_last_not_of('=') - 1;
  if (padding > 2) return false;
  for (size_t i = 0; i < s.size() - padding; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!absl::ascii_isalnum(c) && c != '+' && c != '/') return false;
  }
  return true;
}

// Does the header text `text` say what the body's `value` says, for a parameter of `type`?
bool agrees(const std::string& text, const rapidjson::Value& value, const std::string& type) {
  if (value.IsString()) return text == sdk::as_view(value);
  if (value.IsBool()) return text == (value.GetBool() ? "true" : "false");
  if (value.IsNumber() && type != "string") {
    // Numerically: 42.0 and 42 are the same integer.
    char* end = nullptr;
    const double parsed = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(parsed)) return false;
    return parsed == value.GetDouble() && std::fabs(parsed) <= kMaxSafeInteger;
  }
  return false;
}

std::string short_text(std::string_view s) { return s.size() > 100 ? cat(s.substr(0, 100), "...") : std::string(s); }

}  // namespace

absl::StatusOr<std::vector<annotation>> annotations_of(const rapidjson::Value& input_schema) {
  std::vector<annotation> out;
  if (!input_schema.IsObject()) return out;
  std::vector<std::string> path;
  if (absl::Status s = collect(input_schema, path, out); !s.ok()) return s;
  if (out.size() != count_members(input_schema)) {
    return absl::InvalidArgumentError(
        "an x-mcp-header is on a schema reached through something other than \"properties\" (items, a "
        "composition, a condition or a $ref), where no client can find its value");
  }
  std::set<std::string> seen;
  for (const auto& a : out) {
    if (!seen.insert(absl::AsciiStrToLower(a.header)).second) {
      return absl::InvalidArgumentError(cat("two parameters have the x-mcp-header '", a.header, "' (ignoring case)"));
    }
  }
  return out;
}

absl::StatusOr<std::string> decode(std::string_view value) {
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c > 0x7e) {
      return absl::InvalidArgumentError(
          "it holds a character outside visible ASCII, space and tab; send such a value as =?base64?...?=");
    }
  }
  if (value.size() < kPrefix.size() + kSuffix.size() || value.substr(0, kPrefix.size()) != kPrefix ||
      value.substr(value.size() - kSuffix.size()) != kSuffix) {
    return std::string(value);  // literal
  }
  const std::string_view payload = value.substr(kPrefix.size(), value.size() - kPrefix.size() - kSuffix.size());
  std::string decoded;
  if (!canonical_base64(payload) ||
      !absl::Base64Unescape(absl::string_view(payload.data(), payload.size()), &decoded)) {
    return absl::InvalidArgumentError("its =?base64?...?= payload is not valid Base64 (alphabet or padding)");
  }
  return decoded;
}

std::string mismatch(const std::vector<annotation>& annotations, const rapidjson::Value* arguments,
                     const received& headers) {
  for (const auto& a : annotations) {
    const std::string lower = absl::AsciiStrToLower(a.header);
    const std::string* raw = nullptr;
    for (const auto& [name, value] : headers) {
      if (name != lower) continue;
      // Two values: a gateway may have acted on the one this check would not read.
      if (raw != nullptr) return cat("the Mcp-Param-", a.header, " header came more than once");
      raw = &value;
    }
    const rapidjson::Value* value = value_at(arguments, a.path);
    const std::string where = absl::StrJoin(a.path, ".");
    if (value == nullptr || value->IsNull()) {
      if (raw == nullptr) continue;  // nothing to mirror, nothing sent
      return cat("the Mcp-Param-", a.header, " header is '", short_text(*raw), "' but the arguments have no '", where,
                 "'");
    }
    if (raw == nullptr) {
      return cat("the Mcp-Param-", a.header, " header is missing (the arguments have '", where,
                 "', which the tool's inputSchema marks with x-mcp-header)");
    }
    auto text = decode(*raw);
    if (!text.ok()) return cat("the Mcp-Param-", a.header, " header is unacceptable: ", text.status().message());
    if (!agrees(*text, *value, a.type)) {
      return cat("the Mcp-Param-", a.header, " header is '", short_text(*text), "' but the argument '", where, "' is ",
                 short_text(sdk::to_json(*value)));
    }
  }
  return {};
}

}  // namespace toolhost::mcp::param_headers
