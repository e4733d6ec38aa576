#include "toolhost/eleven/values.hpp"

#include <toolhost/analysis/names.hpp>

#include <algorithm>
#include <array>
#include <cstdio>

namespace toolhost::eleven {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Quotes a value for an error message, shortened so a huge argument cannot flood the answer.
std::string shown(std::string_view text) {
  if (text.size() > 60) return "\"" + std::string(text.substr(0, 57)) + "...\"";
  return "\"" + std::string(text) + "\"";
}

std::string one_of(std::span<const std::string_view> values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += i + 1 == values.size() ? " or " : ", ";
    out += values[i];
  }
  return out;
}

bool contains(std::span<const std::string_view> values, std::string_view v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

constexpr std::array<std::string_view, 44> kKeywords = {
    "auto",       "break",     "case",           "char",         "const",    "continue", "default",  "do",
    "double",     "else",      "enum",           "extern",       "float",    "for",      "goto",     "if",
    "inline",     "int",       "long",           "register",     "restrict", "return",   "short",    "signed",
    "sizeof",     "static",    "struct",         "switch",       "typedef",  "union",    "unsigned", "void",
    "volatile",   "while",     "_Alignas",       "_Alignof",     "_Atomic",  "_Bool",    "_Complex", "_Generic",
    "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local"};

}  // namespace

bool looks_like_address(std::string_view text) {
  return text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
}

absl::StatusOr<uint64_t> parse_address(std::string_view text) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(shown(text) +
                                      " is not an address: addresses are hexadecimal with a 0x prefix, like 0x401136.");
  };
  if (!looks_like_address(text) || text.size() == 2) return bad();
  std::string_view digits = text.substr(2);
  if (digits.size() > 16) {
    return absl::InvalidArgumentError(shown(text) + " is not an address: it has more than 16 hexadecimal digits.");
  }
  uint64_t value = 0;
  for (char c : digits) {
    const int d = hex_digit(c);
    if (d < 0) return bad();
    value = (value << 4) | static_cast<uint64_t>(d);
  }
  return value;
}

// The analysis's spellings, so the window and the analysis server name everything alike.
std::string format_address(uint64_t address) { return analysis::hex_address(address); }

std::string ghidra_function_name(uint64_t address) { return analysis::default_function_name(address); }

std::optional<uint64_t> parse_ghidra_function_name(std::string_view name) {
  return analysis::parse_default_function_name(name);
}

bool is_c_identifier(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name[0])) return false;
  for (char c : name) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return std::find(kKeywords.begin(), kKeywords.end(), name) == kKeywords.end();
}

absl::Status check_new_name(std::string_view name) {
  if (is_c_identifier(name)) return absl::OkStatus();
  if (name.empty())
    return absl::InvalidArgumentError("The new name is empty: give a C identifier, like check_license_key.");
  if (std::find(kKeywords.begin(), kKeywords.end(), name) != kKeywords.end()) {
    return absl::InvalidArgumentError(shown(name) +
                                      " is a C keyword, not a name: give a C identifier, like check_license_key.");
  }
  if (name.size() > 255) {
    return absl::InvalidArgumentError("The new name is longer than 255 characters: give a shorter C identifier.");
  }
  return absl::InvalidArgumentError(shown(name) +
                                    " is not a C identifier: use letters, digits and underscores, not starting with a "
                                    "digit, like check_license_key.");
}

absl::StatusOr<std::vector<uint8_t>> parse_hex_bytes(std::string_view text) {
  std::vector<uint8_t> out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    const int hi = hex_digit(text[i]);
    const int lo = i + 1 < text.size() ? hex_digit(text[i + 1]) : -1;
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(
          shown(text) + " is not hex bytes: write two hexadecimal digits per byte, like 1f2003d5 or 90 90.");
    }
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
    if (out.size() > 4096) return absl::InvalidArgumentError("A patch may change at most 4096 bytes.");
    i += 2;
  }
  if (out.empty())
    return absl::InvalidArgumentError("No bytes given: write the new bytes in hex, like 1f2003d5 or 90 90.");
  return out;
}

std::string format_bytes(std::span<const uint8_t> bytes) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
    if (i != 0) out += ' ';
    out += buf;
  }
  return out;
}

absl::Status check_view(std::string_view view) {
  if (contains(kViews, view)) return absl::OkStatus();
  return absl::InvalidArgumentError(shown(view) + " is not a view: use " + one_of(kViews) + ".");
}

absl::Status check_code_type(std::string_view type) {
  if (type.empty() || contains(kCodeTypes, type)) return absl::OkStatus();
  return absl::InvalidArgumentError(shown(type) + " is not a code type: use " + one_of(kCodeTypes) +
                                    ", or empty to read it as code again.");
}

absl::Status check_number_format(std::string_view format) {
  if (format.empty() || contains(kNumberFormats, format)) return absl::OkStatus();
  return absl::InvalidArgumentError(shown(format) + " is not a number format: use " + one_of(kNumberFormats) +
                                    ", or empty for Ghidra's own.");
}

}  // namespace toolhost::eleven
