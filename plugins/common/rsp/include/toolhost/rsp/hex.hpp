// Hex helpers of the GDB remote protocol (lower-case pairs, little-endian register values).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace toolhost::rsp {

std::string to_hex(const void* data, size_t size);
inline std::string to_hex(std::string_view s) { return to_hex(s.data(), s.size()); }
// Decodes pairs of hex digits; 'x' pairs (unavailable register bytes) become 0 and set
// `*unavailable` when given. nullopt for an odd length or a bad digit.
std::optional<std::vector<uint8_t>> from_hex(std::string_view hex, bool* unavailable = nullptr);
// A big-endian hex number as the protocol writes addresses ("7ffff7dd"); nullopt if empty/bad.
std::optional<uint64_t> parse_number(std::string_view hex);
// An address or length for a packet ("7ffff7dd").
std::string number(uint64_t value);
int hex_digit(char c);

}  // namespace toolhost::rsp
