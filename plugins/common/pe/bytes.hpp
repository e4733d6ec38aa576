// Little-endian field access for the PE parsers (private to this library).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace toolhost::pe::detail {

inline uint16_t u16(std::string_view b, size_t at) {
  uint16_t v = 0;
  if (at + 2 <= b.size()) std::memcpy(&v, b.data() + at, 2);
  return v;
}
inline uint32_t u32(std::string_view b, size_t at) {
  uint32_t v = 0;
  if (at + 4 <= b.size()) std::memcpy(&v, b.data() + at, 4);
  return v;
}
inline uint64_t u64(std::string_view b, size_t at) {
  uint64_t v = 0;
  if (at + 8 <= b.size()) std::memcpy(&v, b.data() + at, 8);
  return v;
}

}  // namespace toolhost::pe::detail
