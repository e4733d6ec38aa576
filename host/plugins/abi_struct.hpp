// Reading a struct a plugin handed over, by plugin.h's growth rule: the fields its struct_size
// covers are copied into a zeroed struct of the host's layout (so the rest read as their
// defaults), and bytes past the host's layout must be zero where the struct is a request the host
// acts on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <absl/status/statusor.h>

#include <toolhost/sdk/strings.hpp>

namespace toolhost::plugins {

// A struct_size larger than this is garbage (an uninitialized field), not a newer layout.
inline constexpr uint32_t kMaxStructSize = 64 * 1024;

enum class tail { must_be_zero, ignored };

// The struct at `in` as the host's type T. `name` ("toolhost_tool_desc_t") goes into errors.
template <class T>
absl::StatusOr<T> read_struct(const T* in, std::string_view name, tail rule = tail::must_be_zero) {
  if (in == nullptr) return absl::InvalidArgumentError(cat("no ", name, " was given (a null pointer)"));
  const uint32_t size = in->struct_size;
  if (size < sizeof(uint32_t) || size > kMaxStructSize) {
    return absl::InvalidArgumentError(cat(name, " has struct_size ", size,
                                          ", which is not the size of any version of it; "
                                          "set it to sizeof(",
                                          name, ")"));
  }
  T out{};
  std::memcpy(static_cast<void*>(&out), in, size < sizeof(T) ? size : sizeof(T));
  if (rule == tail::must_be_zero && size > sizeof(T)) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(in);
    for (uint32_t i = sizeof(T); i < size; ++i) {
      if (bytes[i] != 0) {
        return absl::InvalidArgumentError(cat(name, " sets a field this toolhost does not know (byte ", i, " of ", size,
                                              "; this toolhost's ", name, " has ", sizeof(T),
                                              "): the plugin needs a newer toolhost, or must leave that field zero"));
      }
    }
  }
  out.struct_size = static_cast<uint32_t>(sizeof(T));
  return out;
}

}  // namespace toolhost::plugins
