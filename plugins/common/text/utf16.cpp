#include "toolhost/text/utf16.hpp"

namespace toolhost::text {

void append_utf8(std::string& out, char32_t c) {
  if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff) c = 0xfffd;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

void append_printable_utf8(std::string& out, char32_t c) {
  if (c < 0x20 || c == 0x7f) c = '.';
  append_utf8(out, c);
}

std::string utf16le_to_utf8(std::span<const uint8_t> bytes, utf16_options options) {
  std::string out;
  out.reserve(bytes.size() / 2);
  const auto unit = [&](size_t i) -> char32_t { return bytes[i] | (bytes[i + 1] << 8); };
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    char32_t c = unit(i);
    if (c == 0 && options.stop_at_nul) break;
    if (c >= 0xd800 && c < 0xdc00 && i + 3 < bytes.size()) {
      const char32_t low = unit(i + 2);
      if (low >= 0xdc00 && low < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
        i += 2;
      }
    }
    if (options.printable) {
      append_printable_utf8(out, c);
    } else {
      append_utf8(out, c);
    }
  }
  return out;
}

}  // namespace toolhost::text
