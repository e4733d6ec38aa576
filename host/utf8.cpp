#include "host/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace toolhost::utf8 {
namespace {

// The length of the well-formed sequence at `at` (1 to 4), or the length of the maximal
// ill-formed prefix there, negated (-1 to -3).
int sequence_at(std::string_view t, size_t at) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(t[i]); };
  const unsigned char lead = b(at);
  if (lead < 0x80) return 1;
  int need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte (Unicode table 3-7)
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k <= need; ++k) {
    if (at + k >= t.size()) return -k;
    const unsigned char c = b(at + k);
    if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return -k;
  }
  return need + 1;
}

}  // namespace

size_t first_invalid(std::string_view text) {
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  const auto ascii = [&](size_t at, size_t words) {  // no high bit in `words` words from `at`
    uint64_t any = 0;
    for (size_t k = 0; k < words; ++k) {
      uint64_t word;
      std::memcpy(&word, text.data() + at + 8 * k, sizeof word);
      any |= word;
    }
    return (any & kHigh) == 0;
  };
  for (size_t i = 0; i < text.size();) {
    // ASCII runs are most of every message: 32 bytes at a time while no high bit is set, then 8.
    // Every message passes here twice; byte by byte this was 3-5% of a tools/call's instructions,
    // and 8 at a time still 2.5 instructions a byte (callgrind, bench/mcp's echo call).
    if (text.size() - i >= 32 && ascii(i, 4)) {
      i += 32;
      continue;
    }
    if (text.size() - i >= 8 && ascii(i, 1)) {
      i += 8;
      continue;
    }
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const int n = sequence_at(text, i);
    if (n < 0) return i;
    i += static_cast<size_t>(n);
  }
  return std::string_view::npos;
}

std::string repaired(std::string_view text) {
  size_t bad = first_invalid(text);
  if (bad == std::string_view::npos) return std::string(text);
  std::string out(text.substr(0, bad));
  for (size_t i = bad; i < text.size();) {
    const int n = sequence_at(text, i);
    if (n > 0) {
      out.append(text.substr(i, static_cast<size_t>(n)));
      i += static_cast<size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<size_t>(-n);
    }
  }
  return out;
}

}  // namespace toolhost::utf8
