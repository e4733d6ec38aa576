// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: MCP 2026-07-28's x-mcp-header rules, for both ends of Streamable HTTP.
//
// A client repeats parts of a request's body in headers so that a gateway can route on them
// without reading the body: `Mcp-Name` repeats params.name or params.uri, and a tool may mark
// string, integer and boolean arguments with `x-mcp-header` in its inputSchema, so that the
// client also sends each as `Mcp-Param-{Name}`. A value that is not plain ASCII travels as
// `=?base64?...?=`. The host (the server side) checks that every such header agrees with the body,
// because the plugin acts on the body while something in front of the host may have acted on the
// header; an MCP client (plugins/common/mcp_client) sends them. Both use this one header, so
// that what one side sends is what the other accepts.
//
// Not part of sdk.hpp: a plugin that only serves tools never needs it. Pure functions. [any thread]
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/ascii.h>
#include <absl/strings/escaping.h>
#include <absl/strings/str_join.h>
#include <rapidjson/document.h>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

namespace toolhost::sdk::param_headers {

// The header name of an annotation `Name` is kPrefix + Name.
inline constexpr std::string_view kPrefix = "Mcp-Param-";

// One x-mcp-header annotation: the {Name} of Mcp-Param-{Name}, the chain of `properties` keys
// from the schema root to the argument, and the argument's JSON Schema type.
struct annotation {
  std::string header;
  std::vector<std::string> path;
  std::string type;  // "string", "integer" or "boolean"
};

namespace detail {

inline constexpr std::string_view kMember = "x-mcp-header";
inline constexpr std::string_view kEncodedPrefix = "=?base64?";
inline constexpr std::string_view kEncodedSuffix = "?=";
inline constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1: what a JavaScript client holds exactly

// RFC 9110's tchar: what a header field name may be made of.
inline bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c)) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) == std::string_view::npos) return false;
  }
  return true;
}

// How many x-mcp-header members the schema holds anywhere.
inline size_t count_members(const rapidjson::Value& v) {
  size_t n = 0;
  if (v.IsObject()) {
    for (const auto& m : v.GetObject()) {
      if (as_view(m.name) == kMember) ++n;
      n += count_members(m.value);
    }
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray()) n += count_members(item);
  }
  return n;
}

// The annotations reachable from `schema` through `properties` alone.
inline absl::Status collect(const rapidjson::Value& schema, std::vector<std::string>& path,
                            std::vector<annotation>& out) {
  const rapidjson::Value* properties = member(schema, "properties");
  if (properties == nullptr || !properties->IsObject()) return absl::OkStatus();
  for (const auto& p : properties->GetObject()) {
    if (!p.value.IsObject()) continue;
    path.emplace_back(as_view(p.name));
    if (const rapidjson::Value* header = member(p.value, kMember)) {
      const std::string where = absl::StrJoin(path, ".");
      if (!header->IsString() || !is_token(as_view(*header))) {
        return absl::InvalidArgumentError(
            cat("the x-mcp-header of '", where, "' is not a header name (letters, digits and !#$%&'*+-.^_`|~)"));
      }
      const std::string type(string_member(p.value, "type").value_or(""));
      if (type != "string" && type != "integer" && type != "boolean") {
        return absl::InvalidArgumentError(cat("the x-mcp-header of '", where, "' is on a parameter of type '", type,
                                              "'; only string, integer and boolean parameters may have one"));
      }
      out.push_back({std::string(as_view(*header)), path, type});
    }
    if (absl::Status s = collect(p.value, path, out); !s.ok()) return s;
    path.pop_back();
  }
  return absl::OkStatus();
}

// The argument at `path`, or null when it is absent.
inline const rapidjson::Value* value_at(const rapidjson::Value* arguments, const std::vector<std::string>& path) {
  const rapidjson::Value* v = arguments;
  for (const auto& key : path) {
    if (v == nullptr || !v->IsObject()) return nullptr;
    v = member(*v, key);
  }
  return v;
}

// Base64 of the standard alphabet with its padding; the empty payload is the empty value.
inline bool canonical_base64(std::string_view s) {
  if (s.size() % 4 != 0) return false;
  if (s.empty()) return true;
  const size_t padding = s.size() - s.find_last_not_of('=') - 1;
  if (padding > 2) return false;
  for (size_t i = 0; i < s.size() - padding; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!absl::ascii_isalnum(c) && c != '+' && c != '/') return false;
  }
  return true;
}

// The sentinel pattern: starts with `=?base64?` and ends with `?=`. `whole` also asks for room for
// both, as decoding does; encoding does not, so that "=?base64?=" is never sent as it is.
inline bool looks_encoded(std::string_view s, bool whole = true) {
  const size_t least = whole ? kEncodedPrefix.size() + kEncodedSuffix.size() : kEncodedPrefix.size();
  return s.size() >= least && s.substr(0, kEncodedPrefix.size()) == kEncodedPrefix &&
         s.substr(s.size() - kEncodedSuffix.size()) == kEncodedSuffix;
}

// A JSON number as the header text of an integer: decimal, exact. Nothing when it is not a whole
// number a JavaScript peer holds exactly.
inline std::optional<std::string> integer_text(const rapidjson::Value& value) {
  if (value.IsInt64()) {
    if (std::fabs(static_cast<double>(value.GetInt64())) > kMaxSafeInteger) return std::nullopt;
    return std::to_string(value.GetInt64());
  }
  if (value.IsUint64()) {
    if (static_cast<double>(value.GetUint64()) > kMaxSafeInteger) return std::nullopt;
    return std::to_string(value.GetUint64());
  }
  const double d = value.GetDouble();  // 42.0: the integer 42
  if (!std::isfinite(d) || d != std::trunc(d) || std::fabs(d) > kMaxSafeInteger) return std::nullopt;
  return std::to_string(static_cast<int64_t>(d));
}

// Does the header text `text` say what the body's `value` says, for a parameter of `type`?
inline bool agrees(const std::string& text, const rapidjson::Value& value, const std::string& type) {
  if (value.IsString()) return text == as_view(value);
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

inline std::string short_text(std::string_view s) {
  return s.size() > 100 ? cat(s.substr(0, 100), "...") : std::string(s);
}

}  // namespace detail

// The annotations of a tool's inputSchema. An error names the first one the spec forbids (empty
// or not an HTTP token, a duplicate ignoring case, on a type other than string/integer/boolean,
// or anywhere but a chain of `properties`): a client over HTTP leaves such a tool out of its
// tools/list, and a server does not enforce it.
inline absl::StatusOr<std::vector<annotation>> annotations_of(const rapidjson::Value& input_schema) {
  std::vector<annotation> out;
  if (!input_schema.IsObject()) return out;
  std::vector<std::string> path;
  if (absl::Status s = detail::collect(input_schema, path, out); !s.ok()) return s;
  if (out.size() != detail::count_members(input_schema)) {
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

// `text` as a header value (Mcp-Name, Mcp-Param-*): itself when an HTTP field value carries it
// unchanged, otherwise `=?base64?<Base64 of its bytes>?=`. Encoded are: a byte outside visible
// ASCII, space and tab (non-ASCII UTF-8, CR, LF); a leading or trailing space or tab, which field
// parsing strips; a value that looks encoded already (the spec's rule against ambiguity); and
// the empty value, as the official TypeScript client does (some HTTP stacks drop empty fields).
inline std::string encode(std::string_view text) {
  bool plain = !text.empty() && !detail::looks_encoded(text, false);
  if (plain) {
    const auto blank = [](char c) { return c == ' ' || c == '\t'; };
    plain = !blank(text.front()) && !blank(text.back());
  }
  for (size_t i = 0; plain && i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    plain = c == '\t' || (c >= 0x20 && c <= 0x7e);
  }
  if (plain) return std::string(text);
  return cat(detail::kEncodedPrefix, absl::Base64Escape(absl::string_view(text.data(), text.size())),
             detail::kEncodedSuffix);
}

// A header value as the client meant it: `=?base64?...?=` decoded, anything else literal. An
// error says why it is unacceptable (a character outside visible ASCII, space and tab, or a
// Base64 payload that is not canonical Base64).
inline absl::StatusOr<std::string> decode(std::string_view value) {
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c > 0x7e) {
      return absl::InvalidArgumentError(
          "it holds a character outside visible ASCII, space and tab; send such a value as =?base64?...?=");
    }
  }
  if (!detail::looks_encoded(value)) return std::string(value);  // literal
  const std::string_view payload = value.substr(
      detail::kEncodedPrefix.size(), value.size() - detail::kEncodedPrefix.size() - detail::kEncodedSuffix.size());
  std::string decoded;
  if (!detail::canonical_base64(payload) ||
      !absl::Base64Unescape(absl::string_view(payload.data(), payload.size()), &decoded)) {
    return absl::InvalidArgumentError("its =?base64?...?= payload is not valid Base64 (alphabet or padding)");
  }
  return decoded;
}

// Header name and value pairs, as a client sends them (`Mcp-Param-Region`, `=?base64?...?=`).
using headers = std::vector<std::pair<std::string, std::string>>;

// The Mcp-Param-{Name} headers a client sends with a tools/call whose `arguments` (may be null)
// are for a tool with `annotations`: one per annotated argument that is present and not null,
// strings encoded, integers in decimal, booleans as true/false. An argument of another kind (an
// object, a fraction, an integer beyond 2^53 - 1) gets no header: the server refuses the call
// either way, and says why better than a header could.
inline headers headers_for(const std::vector<annotation>& annotations, const rapidjson::Value* arguments) {
  headers out;
  for (const auto& a : annotations) {
    const rapidjson::Value* value = detail::value_at(arguments, a.path);
    if (value == nullptr || value->IsNull()) continue;
    std::optional<std::string> text;
    if (value->IsString()) {
      text = std::string(as_view(*value));
    } else if (value->IsBool()) {
      text = value->GetBool() ? "true" : "false";
    } else if (value->IsNumber()) {
      text = detail::integer_text(*value);
    }
    if (text) out.emplace_back(cat(kPrefix, a.header), encode(*text));
  }
  return out;
}

// Mcp-Param-* headers received, as (the {Name} part in lower case, the raw value).
using received = std::vector<std::pair<std::string, std::string>>;

// Empty when the headers agree with `arguments` (may be null) for every annotation; otherwise a
// sentence saying which header disagrees and how.
inline std::string mismatch(const std::vector<annotation>& annotations, const rapidjson::Value* arguments,
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
    const rapidjson::Value* value = detail::value_at(arguments, a.path);
    const std::string where = absl::StrJoin(a.path, ".");
    if (value == nullptr || value->IsNull()) {
      if (raw == nullptr) continue;  // nothing to mirror, nothing sent
      return cat("the Mcp-Param-", a.header, " header is '", detail::short_text(*raw), "' but the arguments have no '",
                 where, "'");
    }
    if (raw == nullptr) {
      return cat("the Mcp-Param-", a.header, " header is missing (the arguments have '", where,
                 "', which the tool's inputSchema marks with x-mcp-header)");
    }
    auto text = decode(*raw);
    if (!text.ok()) return cat("the Mcp-Param-", a.header, " header is unacceptable: ", text.status().message());
    if (!detail::agrees(*text, *value, a.type)) {
      return cat("the Mcp-Param-", a.header, " header is '", detail::short_text(*text), "' but the argument '", where,
                 "' is ", detail::short_text(to_json(*value)));
    }
  }
  return {};
}

}  // namespace toolhost::sdk::param_headers
