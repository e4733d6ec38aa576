// Little-endian field access on byte buffers, bounds-checked by the caller's sizes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace toolhost::kd {

inline void put_u16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}
inline void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t get_u16(std::span<const uint8_t> b, size_t at) {
  if (at + 2 > b.size()) return 0;
  return static_cast<uint16_t>(b[at] | b[at + 1] << 8);
}
inline uint32_t get_u32(std::span<const uint8_t> b, size_t at) {
  if (at + 4 > b.size()) return 0;
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | b[at + i];
  return v;
}
inline uint64_t get_u64(std::span<const uint8_t> b, size_t at) {
  if (at + 8 > b.size()) return 0;
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | b[at + i];
  return v;
}

}  // namespace toolhost::kd
