// UTF-8 checks for what crosses the host: MCP messages are UTF-8 JSON (RFC 8259), so input that
// is not is refused, and output a plugin spoils is repaired before a client sees it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace toolhost::utf8 {

// The offset of the first byte that does not start a well-formed UTF-8 sequence (overlong
// forms, surrogates and code points past U+10FFFF are not), or npos when all of it is valid.
size_t first_invalid(std::string_view text);

// `text` with each maximal ill-formed subsequence replaced by U+FFFD, as the Unicode standard
// recommends (and WHATWG's decoder does). Safe on serialized JSON: structure is ASCII, so a
// replacement only ever lands inside a string.
std::string repaired(std::string_view text);

}  // namespace toolhost::utf8
