// UTF-16LE as it lies in a target's memory (a UNICODE_STRING's buffer, a wide string member)
// turned into UTF-8 for an MCP client. What is read from a target can be any bytes, so nothing
// here fails: what is not a character becomes U+FFFD.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace toolhost::text {

// Appends code point `c` to `out` as UTF-8 (one to four bytes). A surrogate half or a value past
// U+10FFFF, which UTF-8 cannot carry, is appended as U+FFFD.
void append_utf8(std::string& out, char32_t c);

// As append_utf8, but for a character shown inside a line of text: C0 controls and DEL become
// '.', as a debugger's string display shows them, so that a string cannot break the line.
void append_printable_utf8(std::string& out, char32_t c);

struct utf16_options {
  bool stop_at_nul = false;  // a C string: stop at the first U+0000 (a counted string goes on)
  bool printable = false;    // controls as '.', as append_printable_utf8
};

// The UTF-8 text of `bytes` read as UTF-16LE: surrogate pairs joined, an unpaired half as
// U+FFFD; an odd last byte is ignored.
std::string utf16le_to_utf8(std::span<const uint8_t> bytes, utf16_options options = {});

}  // namespace toolhost::text
