// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: checks a JSON value against a JSON Schema: tool arguments against the tool's input
// schema before the tool runs (here), and the host checks plugin settings with it too.
//
// Covers what models and people get wrong in practice: a missing required member, a wrong type, a
// value outside an enum or a range, an unknown member where the schema forbids extras. It walks
// nested objects and array items. It is not a full JSON Schema validator, on purpose: a tool's
// schema also reaches the client, which does its own validation.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::sdk {

// One mismatch: `path` names the member ("opts.deep", "list[1]"; "" for the value itself) and
// `what` says what is wrong with it ("must be string, not integer").
struct schema_problem {
  enum class kind { type, enumeration, range, required, unknown };
  kind is;
  std::string path;
  std::string what;
};

// How strictly to read a schema.
struct schema_rules {
  // An object schema without additionalProperties admits no other members (settings a person
  // typed: a misspelt key must be an error). By JSON Schema's own rule it admits any.
  bool closed_by_default = false;
  // minimum and maximum are checked.
  bool ranges = false;
};

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

inline std::string member_path(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

inline std::optional<schema_problem> check_value(const rapidjson::Value& schema, const rapidjson::Value& value,
                                                 const std::string& path, const schema_rules& rules) {
  using kind = schema_problem::kind;
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
    if (!ok)
      return schema_problem{kind::type, path, "must be " + describe_type(*type) + ", not " + json_type_name(value)};
  }
  if (const auto* allowed = member(schema, "enum"); allowed != nullptr && allowed->IsArray()) {
    bool found = false;
    std::string list;
    for (const auto& option : allowed->GetArray()) {
      found = found || option == value;
      if (!list.empty()) list += ", ";
      list += to_json(option);
    }
    if (!found) return schema_problem{kind::enumeration, path, "must be one of " + list + ", not " + to_json(value)};
  }
  if (rules.ranges && value.IsNumber()) {
    const auto* low = member(schema, "minimum");
    const auto* high = member(schema, "maximum");
    if (low != nullptr && low->IsNumber() && value.GetDouble() < low->GetDouble()) {
      return schema_problem{kind::range, path, "must be at least " + to_json(*low) + ", not " + to_json(value)};
    }
    if (high != nullptr && high->IsNumber() && value.GetDouble() > high->GetDouble()) {
      return schema_problem{kind::range, path, "must be at most " + to_json(*high) + ", not " + to_json(value)};
    }
  }
  if (value.IsObject()) {
    const auto* properties = member(schema, "properties");
    if (const auto* required = member(schema, "required"); required != nullptr && required->IsArray()) {
      for (const auto& name : required->GetArray()) {
        if (!name.IsString() || member(value, as_view(name)) != nullptr) continue;
        std::string hint;
        if (properties != nullptr) {
          if (const auto* p = member(*properties, as_view(name)); p != nullptr) {
            if (const auto* t = member(*p, "type")) hint = " (" + describe_type(*t) + ")";
          }
        }
        return schema_problem{kind::required, member_path(path, as_view(name)), "is required" + hint};
      }
    }
    const auto* extra = member(schema, "additionalProperties");
    const bool closed = extra != nullptr ? extra->IsBool() && !extra->GetBool() : rules.closed_by_default;
    for (const auto& m : value.GetObject()) {
      const std::string where = member_path(path, as_view(m.name));
      const rapidjson::Value* sub = properties != nullptr ? member(*properties, as_view(m.name)) : nullptr;
      if (sub == nullptr && extra != nullptr && extra->IsObject()) sub = extra;
      if (sub == nullptr) {
        if (closed) return schema_problem{kind::unknown, where, "is not an argument of this tool"};
        continue;
      }
      if (auto problem = check_value(*sub, m.value, where, rules)) return problem;
    }
  }
  if (value.IsArray()) {
    if (const auto* items = member(schema, "items"); items != nullptr && items->IsObject()) {
      size_t i = 0;
      for (const auto& item : value.GetArray()) {
        if (auto problem = check_value(*items, item, path + "[" + std::to_string(i++) + "]", rules)) return problem;
      }
    }
  }
  return std::nullopt;
}

}  // namespace detail

// The first mismatch between `value` and `schema`, or nullopt when it fits.
inline std::optional<schema_problem> check_schema(const rapidjson::Value& schema, const rapidjson::Value& value,
                                                  const schema_rules& rules = {}) {
  return detail::check_value(schema, value, "", rules);
}

// Returns a sentence saying what is wrong with `arguments`, or nullopt when they fit `schema`.
inline std::optional<std::string> check_arguments(const rapidjson::Value& schema, const rapidjson::Value& arguments) {
  if (!arguments.IsObject()) return std::string("the arguments must be a JSON object");
  auto problem = check_schema(schema, arguments);
  if (!problem) return std::nullopt;
  return "'" + problem->path + "' " + problem->what;
}

}  // namespace toolhost::sdk
