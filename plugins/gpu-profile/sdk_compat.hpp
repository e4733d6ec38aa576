// The SDK, plus one overload it needs with Debian 12's Abseil.
//
// There absl::string_view is a type of its own, and the SDK hands Status::message() to
// sdk::write(std::string_view). A template overload visible before the SDK's inline functions
// converts it; a plain overload the SDK may add later wins over it. Drop this file once the
// SDK converts the message itself.
#pragma once

#include <string_view>
#include <type_traits>

#include <absl/strings/string_view.h>

#include <toolhost/sdk/writer.hpp>

namespace toolhost::sdk {
#if !defined(ABSL_USES_STD_STRING_VIEW)
template <class View>
  requires std::is_same_v<std::decay_t<View>, absl::string_view>
inline void write(toolhost_writer_t* out, View text) noexcept {
  write(out, std::string_view(text.data(), text.size()));
}
#endif
}  // namespace toolhost::sdk

#include <toolhost/sdk/sdk.hpp>
