#include "toolhost/kdnet/datagram.hpp"

#include <cstring>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>

#include "toolhost/kdnet/crypto.hpp"

namespace toolhost::kdnet {
namespace {

constexpr uint8_t kMagic[4] = {'M', 'D', 'B', 'G'};
constexpr uint8_t kFromHost = 0x80;

const key256* cipher_key(const key_set& keys, channel c) {
  if (c == channel::control) return &keys.control;
  return keys.data ? &*keys.data : nullptr;
}

}  // namespace

key_set key_set::from_control(const key256& control) {
  key_set keys;
  keys.control = control;
  keys.hmac = hmac_key(control);
  return keys;
}

absl::StatusOr<std::vector<uint8_t>> encode_datagram(const key_set& keys, const datagram& d) {
  if (d.sequence > kMaxSequence) return absl::InvalidArgumentError("KDNET sequence number exceeds 56 bits");
  if (d.payload.size() > kMaxPayload) {
    return absl::InvalidArgumentError(absl::StrCat("KDNET payload of ", d.payload.size(), " bytes is too large"));
  }
  const key256* key = cipher_key(keys, d.chan);
  if (key == nullptr) return absl::FailedPreconditionError("no KDNET data key yet: the handshake has not completed");

  const size_t pad = (16 - (kMetadataSize + d.payload.size()) % 16) % 16;
  const size_t body = kMetadataSize + d.payload.size() + pad;
  std::vector<uint8_t> out(kHeaderSize + body + kTagSize, 0);
  std::memcpy(out.data(), kMagic, 4);
  out[4] = d.version;
  out[5] = static_cast<uint8_t>(d.chan);
  const uint64_t meta = (d.sequence << 8) | (d.from_host ? kFromHost : 0) | pad;
  for (size_t i = 0; i < 8; ++i) out[kHeaderSize + i] = static_cast<uint8_t>(meta >> (56 - 8 * i));
  if (!d.payload.empty()) std::memcpy(out.data() + kHeaderSize + kMetadataSize, d.payload.data(), d.payload.size());

  const digest256 mac = hmac_sha256(keys.hmac, std::span<const uint8_t>(out.data(), kHeaderSize + body));
  uint8_t* tag = out.data() + kHeaderSize + body;
  std::memcpy(tag, mac.data(), kTagSize);
  if (auto s = aes256_cbc_encrypt(*key, std::span<const uint8_t, 16>(tag, 16),
                                  std::span<uint8_t>(out.data() + kHeaderSize, body));
      !s.ok()) {
    return s;
  }
  return out;
}

absl::StatusOr<datagram> decode_datagram(const key_set& keys, std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderSize + 16 + kTagSize) {
    return absl::InvalidArgumentError(absl::StrCat("KDNET datagram of ", bytes.size(), " bytes is too short"));
  }
  const size_t body = bytes.size() - kHeaderSize - kTagSize;
  if (body % 16 != 0) return absl::InvalidArgumentError("KDNET datagram body is not a whole number of AES blocks");
  if (body > kMetadataSize + kMaxPayload + 15) return absl::InvalidArgumentError("KDNET datagram is too large");
  if (std::memcmp(bytes.data(), kMagic, 4) != 0)
    return absl::InvalidArgumentError("not a KDNET datagram (no MDBG magic)");
  if (bytes[5] > 1) return absl::InvalidArgumentError(absl::StrCat("unknown KDNET channel ", bytes[5]));
  const auto chan = static_cast<channel>(bytes[5]);
  const key256* key = cipher_key(keys, chan);
  if (key == nullptr) return absl::FailedPreconditionError("KDNET data before the handshake");

  std::vector<uint8_t> plain(bytes.begin(), bytes.end() - kTagSize);
  const uint8_t* tag = bytes.data() + kHeaderSize + body;
  if (auto s = aes256_cbc_decrypt(*key, std::span<const uint8_t, 16>(tag, 16),
                                  std::span<uint8_t>(plain.data() + kHeaderSize, body));
      !s.ok()) {
    return s;
  }
  const digest256 mac = hmac_sha256(keys.hmac, plain);
  if (!equal_constant_time(std::span<const uint8_t>(mac.data(), kTagSize), std::span<const uint8_t>(tag, kTagSize))) {
    return absl::UnauthenticatedError("KDNET datagram failed authentication (corrupted, or sent with another key)");
  }

  uint64_t meta = 0;
  for (size_t i = 0; i < 8; ++i) meta = (meta << 8) | plain[kHeaderSize + i];
  const size_t pad = meta & 0x0F;
  if (pad > body - kMetadataSize) return absl::InvalidArgumentError("KDNET padding longer than the body");

  datagram d;
  d.version = bytes[4];
  d.chan = chan;
  d.sequence = meta >> 8;
  d.from_host = (meta & kFromHost) != 0;
  d.payload.assign(plain.begin() + kHeaderSize + kMetadataSize, plain.end() - static_cast<ptrdiff_t>(pad));
  return d;
}

}  // namespace toolhost::kdnet
