// Reading a request's params (for the session's method handlers).
#pragma once

#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp {

inline const rapidjson::Value* object_param(const rapidjson::Value* params, std::string_view name) {
  const rapidjson::Value* v = params != nullptr ? sdk::member(*params, name) : nullptr;
  return v != nullptr && v->IsObject() ? v : nullptr;
}

inline std::string string_param(const rapidjson::Value* params, std::string_view name) {
  return params != nullptr ? std::string(sdk::string_member(*params, name).value_or("")) : std::string();
}

}  // namespace toolhost::mcp
