// 2026-07-28 over Streamable HTTP: the values a client repeats in headers so that a gateway can
// route on them without reading the body. `Mcp-Name` repeats params.name or params.uri, and a
// tool may mark string, integer and boolean arguments with `x-mcp-header` in its inputSchema, so
// that the client also sends each as `Mcp-Param-{Name}`. A value that is not plain ASCII travels
// as `=?base64?...?=`. The host checks that every such header agrees with the body, because the
// plugin acts on the body while something in front of the host may have acted on the header.
// Pure functions. [any thread]
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>
#include <rapidjson/document.h>

namespace toolhost::mcp::param_headers {

// One x-mcp-header annotation: the {Name} of Mcp-Param-{Name}, the chain of `properties` keys
// from the schema root to the argument, and the argument's JSON Schema type.
struct annotation {
  std::string header;
  std::vector<std::string> path;
  std::string type;  // "string", "integer" or "boolean"
};

// The annotations of a tool's inputSchema. An error names the first one the spec forbids (empty
// or not an HTTP token, a duplicate ignoring case, on a type other than string/integer/boolean,
// or anywhere but a chain of `properties`): clients drop such a tool, so it is not enforced.
absl::StatusOr<std::vector<annotation>> annotations_of(const rapidjson::Value& input_schema);

// A header value as the client meant it: `=?base64?...?=` decoded, anything else literal. An
// error says why it is unacceptable (a character outside visible ASCII, space and tab, or a
// Base64 payload that is not canonical Base64).
absl::StatusOr<std::string> decode(std::string_view value);

// Mcp-Param-* headers received, as (the {Name} part in lower case, the raw value).
using received = std::vector<std::pair<std::string, std::string>>;

// Empty when the headers agree with `arguments` (may be null) for every annotation; otherwise a
// sentence saying which header disagrees and how.
std::string mismatch(const std::vector<annotation>& annotations, const rapidjson::Value* arguments,
                     const received& headers);

}  // namespace toolhost::mcp::param_headers
