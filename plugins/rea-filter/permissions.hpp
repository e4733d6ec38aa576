// Which permission row a proxied tool belongs to.
#pragma once

#include <string_view>

#include <rapidjson/document.h>

namespace toolhost::rea_filter {

// The kind this plugin registers for tools that only read.
inline constexpr const char* kReadKind = "rea.read";
inline constexpr const char* kReadLabel = "Read the open file";
// The host's built-in kind for everything else.
inline constexpr const char* kRunKind = "run";

// True when a tool only reads: its name follows REA's read-only patterns (open_binary,
// binary_overview, xrefs, list_*, procedure_*, read_*, search_*, inspect_*, get_*, find_*,
// analyze_*, compare_*), or the upstream marked it readOnlyHint. `annotations` may be null.
bool is_read_only(std::string_view name, const rapidjson::Value* annotations);

}  // namespace toolhost::rea_filter
