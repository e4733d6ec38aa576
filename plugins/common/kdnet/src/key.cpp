#include "toolhost/kdnet/key.hpp"

#include <string>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>

#include "toolhost/kdnet/crypto.hpp"

namespace toolhost::kdnet {
namespace {

constexpr std::string_view kExpectedForm =
    "expected four base-36 numbers separated by dots, such as 1.2.3.4 or the key kdnet.exe printed "
    "(each 1-13 characters of 0-9 and a-z, at most 3w5e11264sgsf)";

absl::Status malformed(std::string_view text, std::string_view why) {
  // absl::StrCat cannot take std::string_view with this Abseil build; plain strings can.
  return absl::InvalidArgumentError("Malformed KDNET key \"" + std::string(text) + "\": " + std::string(why) + "; " +
                                    std::string(kExpectedForm) + ".");
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::StatusOr<control_key> parse_key(std::string_view text) {
  control_key key;
  std::string_view rest = text;
  for (size_t index = 0; index < 4; ++index) {
    const size_t dot = rest.find('.');
    const std::string_view part = rest.substr(0, dot);
    const std::string ordinal = std::to_string(index + 1);
    if (part.empty()) return malformed(text, absl::StrCat("part ", ordinal, " is empty"));
    if (index < 3 && dot == std::string_view::npos) {
      return malformed(text, absl::StrCat("it has ", index + 1, " part", index == 0 ? "" : "s", " instead of 4"));
    }
    if (index == 3 && dot != std::string_view::npos) return malformed(text, "it has more than 4 parts");
    if (part.size() > 13) return malformed(text, absl::StrCat("part ", ordinal, " has more than 13 characters"));
    uint64_t value = 0;
    for (char c : part) {
      const int digit = digit_value(c);
      if (digit < 0) {
        return malformed(text, absl::StrCat("part ", ordinal, " contains '", std::string(1, c), "'"));
      }
      if (value > (UINT64_MAX - static_cast<uint64_t>(digit)) / 36) {
        return malformed(text, absl::StrCat("part ", ordinal, " does not fit in 64 bits"));
      }
      value = value * 36 + static_cast<uint64_t>(digit);
    }
    key.words[index] = value;
    for (size_t b = 0; b < 8; ++b) key.bytes[index * 8 + b] = static_cast<uint8_t>(value >> (8 * b));
    rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
  }
  return key;
}

key256 hmac_key(const key256& control) {
  key256 out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(~control[i]);
  return out;
}

key256 data_key(const key256& control, std::span<const uint8_t> reply_body) {
  return sha256({std::span<const uint8_t>(control), reply_body});
}

}  // namespace toolhost::kdnet
