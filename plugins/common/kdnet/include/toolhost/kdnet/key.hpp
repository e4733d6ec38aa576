// KDNET keys: the "a.b.c.d" text that kdnet.exe prints and the keys derived from it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include <absl/status/statusor.h>

namespace toolhost::kdnet {

using key256 = std::array<uint8_t, 32>;

// The four numbers of the text form and the 32-byte control key they make (each number stored
// little-endian, in order).
struct control_key {
  std::array<uint64_t, 4> words{};
  key256 bytes{};
};

// Parses "a.b.c.d": four base-36 numbers (1-13 of 0-9, a-z, case-insensitive), each fitting in
// 64 bits. The error names the bad part and shows the expected form.
absl::StatusOr<control_key> parse_key(std::string_view text);

// The HMAC key: every byte of the control key inverted.
key256 hmac_key(const key256& control);

// The data-channel key: SHA-256 over the control key followed by the host's handshake reply body.
key256 data_key(const key256& control, std::span<const uint8_t> reply_body);

}  // namespace toolhost::kdnet
