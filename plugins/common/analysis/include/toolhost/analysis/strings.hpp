// toolhost::analysis: the text strings in an image's data sections: runs of printable ASCII
// (with tab and line breaks) and well-formed UTF-8, and UTF-16LE runs of the same characters,
// NUL-terminated or not. Every run `strings -n N` prints from a data section lies inside one of
// them when N is at least the minimum length.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "toolhost/analysis/image.hpp"

namespace toolhost::analysis {

enum class string_encoding : uint8_t { ascii, utf8, utf16le };
// Charset names as Ghidra reports them: "US-ASCII", "UTF-8", "UTF-16LE".
std::string_view to_string(string_encoding e);

struct string_entry {
  uint64_t address = 0;
  uint32_t byte_length = 0;  // without the terminator
  uint32_t characters = 0;
  string_encoding encoding = string_encoding::ascii;
  bool terminated = false;  // a NUL follows
};

inline constexpr size_t kMinimumStringLength = 5;  // characters; Ghidra's default

// Strings of at least `min_chars` characters in the allocated, non-executable sections the
// file holds bytes for, sorted by address.
std::vector<string_entry> find_strings(const image& img, size_t min_chars = kMinimumStringLength);
// Strings in `bytes` (loaded at `address`).
void find_strings_in(std::span<const uint8_t> bytes, uint64_t address, size_t min_chars,
                     std::vector<string_entry>& out);

// The length of the well-formed UTF-8 sequence at the start of `bytes` (1 for ASCII), or 0.
size_t utf8_sequence_length(std::span<const uint8_t> bytes);
// `text` with each byte that is not part of well-formed UTF-8 replaced by U+FFFD (symbol names
// in a binary can be any bytes; answers must be valid JSON).
std::string valid_utf8(std::string_view text);

// The string's text as UTF-8, cut after `max_chars` characters (`*truncated` says whether).
std::string string_text(const image& img, const string_entry& s, size_t max_chars, bool* truncated = nullptr);

}  // namespace toolhost::analysis
