// toolhost::analysis: how the analysis writes addresses and names the functions nothing names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace toolhost::analysis {

// 0x + lowercase hex without padding, as REA and Ghidra write addresses: 0x401136.
std::string hex_address(uint64_t address);
// Hexadecimal with or without 0x (REA's providers accept both), at most 16 digits.
std::optional<uint64_t> parse_hex_address(std::string_view text);

// Ghidra's name for a function without a symbol: FUN_ + at least 8 lowercase hex digits.
std::string default_function_name(uint64_t address);
// The address in such a name, or nullopt.
std::optional<uint64_t> parse_default_function_name(std::string_view name);

}  // namespace toolhost::analysis
