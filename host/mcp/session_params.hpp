// Reading a request's params (for the session's method handlers).
#pragma once

#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp {

// 2026-07-28's request context: the keys of params._meta every request carries instead of a
// session's initialize.
inline constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kMetaLogLevel = "io.modelcontextprotocol/logLevel";

inline const rapidjson::Value* object_param(const rapidjson::Value* params, std::string_view name) {
  const rapidjson::Value* v = params != nullptr ? sdk::member(*params, name) : nullptr;
  return v != nullptr && v->IsObject() ? v : nullptr;
}

// MCP's log levels, least severe first.
inline constexpr const char* kLogLevels[] = {"debug", "info",     "notice", "warning",
                                             "error", "critical", "alert",  "emergency"};

// The index of a level's name in kLogLevels, or -1.
inline int log_level_index(std::string_view name) {
  for (int i = 0; i < 8; ++i) {
    if (name == kLogLevels[i]) return i;
  }
  return -1;
}

inline std::string string_param(const rapidjson::Value* params, std::string_view name) {
  return params != nullptr ? std::string(sdk::string_member(*params, name).value_or("")) : std::string();
}

}  // namespace toolhost::mcp
