// The eleven server's tools as the document specifies them: names, descriptions, argument
// schemas, permission rows, and the argument checks the plugin runs before anything goes to
// the window.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <absl/status/status.h>
#include <rapidjson/document.h>

namespace toolhost::eleven {

struct permission_row {
  std::string_view id;
  std::string_view label;  // exactly the document's row
  int32_t default_value;   // TOOLHOST_PERMISSION_*
};

struct tool_spec {
  std::string_view name;
  std::string_view title;
  std::string_view description;
  std::string_view input_schema;
  std::string_view output_schema;  // empty when the answer is text
  std::string_view permission;     // a permission_row id
  uint32_t flags;                  // TOOLHOST_TOOL_*
  bool read_only;
  // Checks the arguments (already shaped by the schema); the error is one sentence.
  absl::Status (*check)(const rapidjson::Value& args);
};

std::span<const permission_row> permission_rows();
std::span<const tool_spec> tool_specs();

}  // namespace toolhost::eleven
