// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: building a tool's answer (an MCP CallToolResult).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <toolhost/sdk/json.hpp>

namespace toolhost::sdk {

class result {
 public:
  // A text answer.
  static result text(std::string_view text) { return result().add_text(text); }
  // A tool error: the model reads `message` and can correct itself.
  static result error(std::string_view message) {
    result r;
    r.add_text(message);
    r.error_ = true;
    return r;
  }
  // Structured content (a JSON object as text); a text copy is added for older clients unless
  // the answer already has content.
  static result structured(std::string json_object) {
    result r;
    r.structured_ = std::move(json_object);
    return r;
  }

  result& add_text(std::string_view text) {
    content_.push_back(std::string(R"({"type":"text","text":)") + quote(text) + "}");
    return *this;
  }
  result& add_image(std::string_view base64, std::string_view mime_type) {
    content_.push_back(std::string(R"({"type":"image","data":)") + quote(base64) + R"(,"mimeType":)" +
                       quote(mime_type) + "}");
    return *this;
  }
  result& add_audio(std::string_view base64, std::string_view mime_type) {
    content_.push_back(std::string(R"({"type":"audio","data":)") + quote(base64) + R"(,"mimeType":)" +
                       quote(mime_type) + "}");
    return *this;
  }
  // Any MCP content block, as JSON text.
  result& add_content(std::string json_block) {
    content_.push_back(std::move(json_block));
    return *this;
  }
  result& set_structured(std::string json_object) {
    structured_ = std::move(json_object);
    return *this;
  }
  result& set_error(bool is_error = true) {
    error_ = is_error;
    return *this;
  }

  bool is_error() const { return error_; }

  // The CallToolResult as JSON text.
  std::string to_json() const {
    std::string out = R"({"content":[)";
    if (content_.empty() && !structured_.empty()) {
      out += std::string(R"({"type":"text","text":)") + quote(structured_) + "}";
    }
    for (size_t i = 0; i < content_.size(); ++i) {
      if (i != 0) out += ',';
      out += content_[i];
    }
    out += ']';
    if (!structured_.empty()) out += R"(,"structuredContent":)" + structured_;
    if (error_) out += R"(,"isError":true)";
    out += '}';
    return out;
  }

 private:
  std::vector<std::string> content_;
  std::string structured_;
  bool error_ = false;
};

}  // namespace toolhost::sdk
