#include "toolhost/analysis/names.hpp"

#include <cstdio>

namespace toolhost::analysis {

std::string hex_address(uint64_t address) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
  return buf;
}

std::optional<uint64_t> parse_hex_address(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) text.remove_prefix(2);
  if (text.empty() || text.size() > 16) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9')
      digit = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f')
      digit = static_cast<unsigned>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      digit = static_cast<unsigned>(c - 'A' + 10);
    else
      return std::nullopt;
    value = value << 4 | digit;
  }
  return value;
}

std::string default_function_name(uint64_t address) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "FUN_%08llx", static_cast<unsigned long long>(address));
  return buf;
}

std::optional<uint64_t> parse_default_function_name(std::string_view name) {
  if (name.substr(0, 4) != "FUN_") return std::nullopt;
  const std::string_view digits = name.substr(4);
  for (char c : digits) {
    if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f')) return std::nullopt;  // Ghidra writes lowercase
  }
  auto value = parse_hex_address(digits);
  if (!value || default_function_name(*value) != name) return std::nullopt;
  return value;
}

}  // namespace toolhost::analysis
