// Number formats of WinDbg output.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace toolhost::debugger {

// "00005555`555551e9": 64-bit addresses as WinDbg prints them.
inline std::string address_text(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "%08llx`%08llx", static_cast<unsigned long long>(v >> 32),
                static_cast<unsigned long long>(v & 0xffffffffull));
  return b;
}
// "0x1f"
inline std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
// "000000000000001f"
inline std::string hex16(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "%016llx", static_cast<unsigned long long>(v));
  return b;
}
// Zero-padded hex of `digits` digits.
inline std::string hex_digits(uint64_t v, int digits) {
  char b[24];
  std::snprintf(b, sizeof(b), "%0*llx", digits, static_cast<unsigned long long>(v));
  return b;
}

}  // namespace toolhost::debugger
