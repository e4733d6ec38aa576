// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: small RapidJSON helpers shared by the SDK, the host and plugins.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace toolhost::sdk {

// Compact JSON text of a value (never contains a raw newline, as stdio framing needs).
inline std::string to_json(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// `text` as a JSON string literal, quotes included.
inline std::string quote(std::string_view text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

// Parses JSON text. On failure returns nullopt and, if `error` is given, a sentence naming the
// offset and the problem.
inline std::optional<rapidjson::Document> parse_json(std::string_view text, std::string* error = nullptr) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());  // trailing text after the value is an error
  if (doc.HasParseError()) {
    if (error != nullptr) {
      *error = std::string("invalid JSON at offset ") + std::to_string(doc.GetErrorOffset()) + ": " +
               rapidjson::GetParseError_En(doc.GetParseError());
    }
    return std::nullopt;
  }
  return doc;
}

// A member of an object, or nullptr when `value` is not an object or lacks it.
inline const rapidjson::Value* member(const rapidjson::Value& value, std::string_view name) {
  if (!value.IsObject()) return nullptr;
  auto it = value.FindMember(
      rapidjson::Value(rapidjson::StringRef(name.data(), static_cast<rapidjson::SizeType>(name.size()))));
  return it == value.MemberEnd() ? nullptr : &it->value;
}

inline std::optional<std::string_view> string_member(const rapidjson::Value& value, std::string_view name) {
  const rapidjson::Value* m = member(value, name);
  if (m == nullptr || !m->IsString()) return std::nullopt;
  return std::string_view(m->GetString(), m->GetStringLength());
}

inline std::string_view as_view(const rapidjson::Value& value) {
  return value.IsString() ? std::string_view(value.GetString(), value.GetStringLength()) : std::string_view();
}

// The JSON type name a schema would use for `value` ("integer" for whole numbers).
inline const char* json_type_name(const rapidjson::Value& value) {
  if (value.IsNull()) return "null";
  if (value.IsBool()) return "boolean";
  if (value.IsString()) return "string";
  if (value.IsArray()) return "array";
  if (value.IsObject()) return "object";
  if (value.IsInt64() || value.IsUint64()) return "integer";
  return "number";
}

}  // namespace toolhost::sdk
