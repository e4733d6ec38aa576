// Debian 12's Abseil has its own absl::string_view (not std::string_view), and the SDK's
// plugin.hpp passes absl::Status::message() to sdk::write(writer, std::string_view). This
// overload, seen before sdk.hpp is included, lets that compile until the SDK converts itself.
#pragma once

#include <string>
#include <string_view>

#include <absl/strings/string_view.h>
#include <toolhost/plugin.h>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::sdk {
#if !defined(ABSL_USES_STD_STRING_VIEW)
inline void write(toolhost_writer_t* writer, absl::string_view text) noexcept {
  write(writer, std::string_view(text.data(), text.size()));
}
// Exact matches for the common argument types, so no call becomes ambiguous.
inline void write(toolhost_writer_t* writer, const std::string& text) noexcept {
  write(writer, std::string_view(text));
}
inline void write(toolhost_writer_t* writer, const char* text) noexcept { write(writer, std::string_view(text)); }
#endif
}  // namespace toolhost::sdk
