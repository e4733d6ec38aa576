// Checks on what a client sends that every plugin relies on, made once in the host: no NUL byte
// hides in a string argument (a C plugin would see the prefix before it, so `open` of
// "/tmp/a\u0000b" opened /tmp/a), progress tokens are what MCP allows, kept as written, and a
// plugin sees the same _meta in either era.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <absl/status/statusor.h>
#include <rapidjson/document.h>

namespace toolhost::mcp {

// Where the first string (or object key) holding a NUL byte is inside `arguments`, as a path
// like "path" or "files[2].name"; nullopt when there is none.
std::optional<std::string> nul_byte_in(const rapidjson::Value& arguments);

// The JSON text to echo a progress token with: a string, or an integer exactly as the client
// wrote it (2^70 too, which a double would round). A float or anything else is an error.
// `message_text` is the raw message the token came in (`index` its place in a batch, or -1):
// integers beyond 64 bits are read from it.
absl::StatusOr<std::string> progress_token_text(const rapidjson::Value& token, std::string_view message_text,
                                                int index);

// A request's _meta as a plugin gets it (toolhost_call.meta_json): without 2026-07-28's request
// context (protocol version, client capabilities, log level), which the host reads and hands over
// in fields of their own.
std::string meta_for_plugins(const rapidjson::Value& meta);

}  // namespace toolhost::mcp
