// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: string concatenation that accepts std::string_view.
//
// Debian 12's Abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW
// is 0), so absl::StrCat does not take a std::string_view. `cat` forwards to absl::StrCat and
// bridges that one type.
#pragma once

#include <string>
#include <string_view>

#include <absl/strings/str_cat.h>

namespace toolhost {

namespace detail {
inline absl::AlphaNum cat_piece(std::string_view s) { return absl::AlphaNum(absl::string_view(s.data(), s.size())); }
template <class T>
const T& cat_piece(const T& value) {
  return value;
}
}  // namespace detail

// absl::StrCat, with std::string_view allowed among the arguments.
template <class... Args>
std::string cat(const Args&... args) {
  return absl::StrCat(detail::cat_piece(args)...);
}

// An absl::string_view (absl::Status::message(), for one) as a std::string_view.
inline std::string_view view(absl::string_view s) { return std::string_view(s.data(), s.size()); }

// Appends cat(args...) to `out`.
template <class... Args>
void append(std::string& out, const Args&... args) {
  out += cat(args...);
}

}  // namespace toolhost
