#include "toolhost/analysis/strings.hpp"

#include <algorithm>

#include <toolhost/text/utf16.hpp>

namespace toolhost::analysis {
namespace {

bool is_text_byte(uint8_t c) { return (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' || c == '\r'; }

// The length of the well-formed UTF-8 sequence of two to four bytes at `b`, or 0.
size_t utf8_sequence(std::span<const uint8_t> b) {
  if (b.empty()) return 0;
  const uint8_t lead = b[0];
  size_t n = 0;
  uint8_t low = 0x80, high = 0xbf;  // the second byte's range, narrowed against overlong forms
  if (lead >= 0xc2 && lead <= 0xdf)
    n = 2;
  else if (lead == 0xe0)
    n = 3, low = 0xa0;
  else if (lead == 0xed)
    n = 3, high = 0x9f;  // no surrogates
  else if (lead >= 0xe1 && lead <= 0xef)
    n = 3;
  else if (lead == 0xf0)
    n = 4, low = 0x90;
  else if (lead >= 0xf1 && lead <= 0xf3)
    n = 4;
  else if (lead == 0xf4)
    n = 4, high = 0x8f;
  else
    return 0;
  if (b.size() < n || b[1] < low || b[1] > high) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (b[i] < 0x80 || b[i] > 0xbf) return 0;
  }
  return n;
}

void find_narrow(std::span<const uint8_t> b, uint64_t address, size_t min_chars, std::vector<string_entry>& out) {
  size_t i = 0;
  while (i < b.size()) {
    const size_t start = i;
    size_t chars = 0;
    bool wide_chars = false;
    while (i < b.size()) {
      if (is_text_byte(b[i])) {
        ++i;
      } else if (b[i] >= 0xc2) {
        const size_t n = utf8_sequence(b.subspan(i));
        if (n == 0) break;
        i += n;
        wide_chars = true;
      } else {
        break;
      }
      ++chars;
    }
    if (chars >= min_chars) {
      string_entry e;
      e.address = address + start;
      e.byte_length = static_cast<uint32_t>(std::min<size_t>(i - start, UINT32_MAX));
      e.characters = static_cast<uint32_t>(std::min<size_t>(chars, UINT32_MAX));
      e.encoding = wide_chars ? string_encoding::utf8 : string_encoding::ascii;
      e.terminated = i < b.size() && b[i] == 0;
      out.push_back(e);
    }
    if (i == start) ++i;
  }
}

bool is_text_unit(uint8_t low, uint8_t high) { return high == 0 && (is_text_byte(low) || low >= 0xa0); }

void find_wide(std::span<const uint8_t> b, uint64_t address, size_t min_chars, std::vector<string_entry>& out) {
  for (size_t parity = 0; parity < 2; ++parity) {
    size_t i = parity;
    while (i + 1 < b.size()) {
      if (!is_text_unit(b[i], b[i + 1])) {
        i += 2;
        continue;
      }
      const size_t start = i;
      while (i + 1 < b.size() && is_text_unit(b[i], b[i + 1])) i += 2;
      const size_t chars = (i - start) / 2;
      if (chars >= min_chars) {
        string_entry e;
        e.address = address + start;
        e.byte_length = static_cast<uint32_t>(std::min<size_t>(i - start, UINT32_MAX));
        e.characters = static_cast<uint32_t>(std::min<size_t>(chars, UINT32_MAX));
        e.encoding = string_encoding::utf16le;
        e.terminated = i + 1 < b.size() && b[i] == 0 && b[i + 1] == 0;
        out.push_back(e);
      }
    }
  }
}

}  // namespace

size_t utf8_sequence_length(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return 0;
  return bytes[0] < 0x80 ? 1 : utf8_sequence(bytes);
}

std::string valid_utf8(std::string_view text) {
  const std::span<const uint8_t> b(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < b.size();) {
    const size_t n = utf8_sequence_length(b.subspan(i));
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string_view to_string(string_encoding e) {
  switch (e) {
    case string_encoding::ascii: return "US-ASCII";
    case string_encoding::utf8: return "UTF-8";
    case string_encoding::utf16le: return "UTF-16LE";
  }
  return "US-ASCII";
}

void find_strings_in(std::span<const uint8_t> bytes, uint64_t address, size_t min_chars,
                     std::vector<string_entry>& out) {
  if (min_chars == 0) min_chars = 1;
  find_narrow(bytes, address, min_chars, out);
  find_wide(bytes, address, min_chars, out);
}

std::vector<string_entry> find_strings(const image& img, size_t min_chars) {
  std::vector<string_entry> out;
  for (const section& s : img.sections()) {
    if (s.executable || s.file_size == 0) continue;
    find_strings_in(img.section_bytes(s), s.address, min_chars, out);
  }
  std::sort(out.begin(), out.end(), [](const string_entry& a, const string_entry& b) { return a.address < b.address; });
  return out;
}

std::string string_text(const image& img, const string_entry& s, size_t max_chars, bool* truncated) {
  const auto bytes = img.file_bytes(s.address, s.byte_length);
  std::string out;
  size_t chars = 0;
  size_t i = 0;
  if (s.encoding == string_encoding::utf16le) {
    i = std::min(bytes.size() & ~size_t{1}, max_chars > bytes.size() / 2 ? bytes.size() : max_chars * 2);
    out = text::utf16le_to_utf8(bytes.first(i));
  } else {
    while (i < bytes.size() && chars < max_chars) {
      const size_t n = std::max<size_t>(1, utf8_sequence_length(bytes.subspan(i)));
      out.append(reinterpret_cast<const char*>(bytes.data()) + i, std::min(n, bytes.size() - i));
      i += n;
      ++chars;
    }
  }
  if (truncated != nullptr) *truncated = i < bytes.size();
  return out;
}

}  // namespace toolhost::analysis
