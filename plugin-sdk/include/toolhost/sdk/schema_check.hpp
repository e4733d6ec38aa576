// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: checks tool arguments against the tool's input schema before the tool runs.
//
// Covers what models get wrong in practice: a missing required argument, a wrong type, a value
// outside an enum, an unknown argument when the schema forbids extras. It walks nested objects
// and array items. It is not a full JSON Schema validator, on purpose: the schema also reaches
// the client, which does its own validation.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::sdk {

namespace detail {

inline bool type_matches(const rapidjson::Value& value, std::string_view type) {
  if (type == "string") return value.IsString();
  if (type == "integer") {
    if (value.IsInt64() || value.IsUint64()) return true;
    return value.IsDouble() && value.GetDouble() == static_cast<double>(static_cast<int64_t>(value.GetDouble()));
  }
  if (type == "number") return value.IsNumber();
  if (type == "boolean") return value.IsBool();
  if (type == "object") return value.IsObject();
  if (type == "array") return value.IsArray();
  if (type == "null") return value.IsNull();
  return true;  // an unknown type keyword constrains nothing here
}

// "string", or "string or null" for a type array.
inline std::string describe_type(const rapidjson::Value& type) {
  if (type.IsString()) return std::string(as_view(type));
  std::string out;
  if (type.IsArray()) {
    for (const auto& t : type.GetArray()) {
      if (!out.empty()) out += " or ";
      out += std::string(as_view(t));
    }
  }
  return out;
}

inline std::optional<std::string> check_value(const rapidjson::Value& schema,
                                              const rapidjson::Value& value,
                                              const std::string& path) {
  if (!schema.IsObject()) return std::nullopt;
  if (const auto* type = member(schema, "type")) {
    bool ok = false;
    if (type->IsString()) {
      ok = type_matches(value, as_view(*type));
    } else if (type->IsArray()) {
      for (const auto& t : type->GetArray()) ok = ok || (t.IsString() && type_matches(value, as_view(t)));
    } else {
      ok = true;
    }
    if (!ok) {
      return "'" + path + "' must be " + describe_type(*type) + ", not " + json_type_name(value);
    }
  }
  if (const auto* allowed = member(schema, "enum"); allowed != nullptr && allowed->IsArray()) {
    bool found = false;
    std::string list;
    for (const auto& option : allowed->GetArray()) {
      found = found || option == value;
      if (!list.empty()) list += ", ";
      list += to_json(option);
    }
    if (!found) return "'" + path + "' must be one of " + list + ", not " + to_json(value);
  }
  if (value.IsObject()) {
    const auto* properties = member(schema, "properties");
    if (const auto* required = member(schema, "required"); required != nullptr && required->IsArray()) {
      for (const auto& name : required->GetArray()) {
        if (!name.IsString() || member(value, as_view(name)) != nullptr) continue;
        std::string where = path.empty() ? std::string(as_view(name)) : path + "." + std::string(as_view(name));
        std::string hint;
        if (properties != nullptr) {
          if (const auto* p = member(*properties, as_view(name)); p != nullptr) {
            if (const auto* t = member(*p, "type")) hint = " (" + describe_type(*t) + ")";
          }
        }
        return "'" + where + "' is required" + hint;
      }
    }
    const auto* extra = member(schema, "additionalProperties");
    const bool closed = extra != nullptr && extra->IsBool() && !extra->GetBool();
    for (const auto& m : value.GetObject()) {
      std::string name(m.name.GetString(), m.name.GetStringLength());
      std::string where = path.empty() ? name : path + "." + name;
      const rapidjson::Value* sub = properties != nullptr ? member(*properties, name) : nullptr;
      if (sub == nullptr) {
        if (closed) return "'" + where + "' is not an argument of this tool";
        continue;
      }
      if (auto problem = check_value(*sub, m.value, where)) return problem;
    }
  }
  if (value.IsArray()) {
    if (const auto* items = member(schema, "items"); items != nullptr && items->IsObject()) {
      size_t i = 0;
      for (const auto& item : value.GetArray()) {
        if (auto problem = check_value(*items, item, path + "[" + std::to_string(i++) + "]")) return problem;
      }
    }
  }
  return std::nullopt;
}

}  // namespace detail

// Returns a sentence saying what is wrong with `arguments`, or nullopt when they fit `schema`.
inline std::optional<std::string> check_arguments(const rapidjson::Value& schema,
                                                  const rapidjson::Value& arguments) {
  if (!arguments.IsObject()) return std::string("the arguments must be a JSON object");
  return detail::check_value(schema, arguments, "");
}

}  // namespace toolhost::sdk
