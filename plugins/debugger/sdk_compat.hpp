// Include this instead of <toolhost/sdk/sdk.hpp>. Debian 12's Abseil is built with its own
// absl::string_view (not std::string_view), and the SDK passes Status::message() to
// sdk::write(); this overload, declared before the SDK's inline functions, lets them compile.
// Remove once the SDK converts the message itself.
#pragma once

#include <string_view>
#include <type_traits>

#include <absl/strings/string_view.h>

#include <toolhost/sdk/writer.hpp>

namespace toolhost::sdk {
#if !defined(ABSL_USES_STD_STRING_VIEW)
template <class T>
  requires std::is_same_v<std::decay_t<T>, absl::string_view>
inline void write(toolhost_writer_t* writer, T text) noexcept {
  write(writer, std::string_view(text.data(), text.size()));
}
#endif
}  // namespace toolhost::sdk

#include <toolhost/sdk/sdk.hpp>
