// toolhost::eleven: the argument values the eleven tools accept, checked the same way by the
// plugin (before anything reaches the window) and by the window (which trusts no client).
// Every error is one sentence that names the bad value and says what would be right.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace toolhost::eleven {

// "0x" followed by 1-16 hexadecimal digits (either case). Anything else, decimal included,
// is refused: the document says addresses are always hexadecimal with a 0x prefix.
absl::StatusOr<uint64_t> parse_address(std::string_view text);
bool looks_like_address(std::string_view text);  // starts with 0x/0X

// 0x + lowercase hex, no padding: 0x401136.
std::string format_address(uint64_t address);

// Ghidra's default function name: FUN_ + the address in lowercase hex, zero-padded to at
// least 8 digits (FUN_00401136, FUN_100001234).
std::string ghidra_function_name(uint64_t address);
// The address in a FUN_<hex> name, or nullopt when `name` is not one.
std::optional<uint64_t> parse_ghidra_function_name(std::string_view name);

// A C identifier: [A-Za-z_][A-Za-z0-9_]*, at most 255 characters, and not a C keyword.
bool is_c_identifier(std::string_view name);
absl::Status check_new_name(std::string_view name);

// Hex bytes like "1f2003d5" or "90 90" (spaces between bytes allowed, an even number of
// digits, 1 to 4096 bytes).
absl::StatusOr<std::vector<uint8_t>> parse_hex_bytes(std::string_view text);
// "1f 20 03 d5"
std::string format_bytes(std::span<const uint8_t> bytes);

// The enumerations of set_view, set_code_type and set_number_format. Each check returns the
// value when it is one of the document's, or an error listing them.
inline constexpr std::string_view kViews[] = {"pseudocode", "assembly", "graph", "hex"};
inline constexpr std::string_view kCodeTypes[] = {"code",  "procedure", "byte",    "word",
                                                  "dword", "qword",     "cstring", "undefined"};
inline constexpr std::string_view kNumberFormats[] = {"hex", "decimal", "char", "offset", "address"};
absl::Status check_view(std::string_view view);
absl::Status check_code_type(std::string_view type);        // empty allowed
absl::Status check_number_format(std::string_view format);  // empty allowed

// The sentence every tool answers with while no file is open.
inline constexpr std::string_view kNoFileOpen = "No file is open in Eleven. Ask the user to open one.";
// How answers filed as suggestions start.
inline constexpr std::string_view kSuggestedPrefix = "Suggested to the user";

}  // namespace toolhost::eleven
