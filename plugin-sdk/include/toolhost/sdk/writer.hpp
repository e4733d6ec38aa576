// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: writers, the ABI's byte sinks, from the C++ side.
#pragma once

#include <string>
#include <string_view>

#include <toolhost/plugin.h>

namespace toolhost::sdk {

// Appends `text` to a writer the other side handed out. A null writer swallows the text.
inline void write(toolhost_writer_t* writer, std::string_view text) noexcept {
  if (writer == nullptr || writer->write == nullptr) return;
  writer->write(writer->ctx, text.data(), text.size());
}

// A writer that appends to a std::string it owns; hand `raw()` across the boundary.
class string_writer {
 public:
  string_writer() noexcept
      : writer_{&text_,
                [](void* ctx, const char* data, size_t size) { static_cast<std::string*>(ctx)->append(data, size); }} {}
  string_writer(const string_writer&) = delete;
  string_writer& operator=(const string_writer&) = delete;

  toolhost_writer_t* raw() noexcept { return &writer_; }
  const std::string& text() const noexcept { return text_; }
  std::string take() noexcept { return std::move(text_); }

 private:
  std::string text_;
  toolhost_writer_t writer_;
};

}  // namespace toolhost::sdk
