// The KDNET handshake bodies on the control channel. The target pokes with a 344-byte body
// [1, 1, client key (32 bytes) @2, ..., host data port big-endian @86]; the port is zero until
// the target has a data channel. The host answers with the same sequence number and a 322-byte
// body [1, 2, the echoed client key, 32 random bytes, zeros]; both sides then derive the data
// key as SHA-256(control key | that reply body).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::kdnet {

inline constexpr size_t kPokeSize = 344;
inline constexpr size_t kResponseSize = 322;
inline constexpr size_t kPokePortOffset = 86;

struct poke {
  std::array<uint8_t, 32> client_key{};
  uint16_t host_port = 0;  // non-zero: a keepalive from a keyed target
};

absl::StatusOr<poke> parse_poke(std::span<const uint8_t> body);

std::vector<uint8_t> response_body(const poke& p, std::span<const uint8_t, 32> host_random);

}  // namespace toolhost::kdnet
