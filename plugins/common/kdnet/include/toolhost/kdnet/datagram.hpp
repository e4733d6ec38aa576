// One KDNET datagram:
//   "MDBG" | version u8 | channel u8                      authenticated, sent in clear
//   metadata u64 big-endian: sequence << 8 | 0x80 if from the host | pad length (low 4 bits)
//   payload (one KD packet, or a control body) | zero padding to a 16-byte multiple
//                                                         encrypted with AES-256-CBC
//   tag: the first 16 bytes of HMAC-SHA256(hmac key, header | metadata | payload | padding)
// The tag is also the IV. The control channel uses the control key, the data channel the data
// key agreed in the handshake. A receiver decrypts, then verifies; nothing unverified is used.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <absl/status/statusor.h>

#include "toolhost/kdnet/key.hpp"

namespace toolhost::kdnet {

enum class channel : uint8_t { data = 0, control = 1 };

inline constexpr size_t kHeaderSize = 6;
inline constexpr size_t kMetadataSize = 8;
inline constexpr size_t kTagSize = 16;
inline constexpr uint64_t kMaxSequence = (uint64_t{1} << 56) - 1;
inline constexpr size_t kMaxPayload = 8192;  // far above a KD packet (16 + 4000)

struct datagram {
  uint8_t version = 0;
  channel chan = channel::data;
  uint64_t sequence = 0;
  bool from_host = false;
  std::vector<uint8_t> payload;
};

// The keys of one side; `data` is empty until the handshake completed.
struct key_set {
  key256 control{};
  key256 hmac{};
  std::optional<key256> data;

  static key_set from_control(const key256& control);
};

absl::StatusOr<std::vector<uint8_t>> encode_datagram(const key_set& keys, const datagram& d);

// Errors: InvalidArgument for a datagram that is not KDNET (size, magic, channel),
// FailedPrecondition for data-channel traffic before a data key exists, Unauthenticated when the
// tag does not match (a corrupted, forged or wrongly keyed datagram).
absl::StatusOr<datagram> decode_datagram(const key_set& keys, std::span<const uint8_t> bytes);

}  // namespace toolhost::kdnet
