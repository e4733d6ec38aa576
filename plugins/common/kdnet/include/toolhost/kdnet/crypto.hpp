// The primitives KDNET uses, on OpenSSL 3 EVP: SHA-256, HMAC-SHA256 and AES-256-CBC without padding.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>

#include <absl/status/status.h>

#include "toolhost/kdnet/key.hpp"

namespace toolhost::kdnet {

using digest256 = std::array<uint8_t, 32>;

// SHA-256 over the concatenation of `parts`.
digest256 sha256(std::initializer_list<std::span<const uint8_t>> parts);

// HMAC-SHA256 of `data` under `key`.
digest256 hmac_sha256(const key256& key, std::span<const uint8_t> data);

// AES-256-CBC in place, no padding: `data.size()` must be a multiple of 16.
absl::Status aes256_cbc_encrypt(const key256& key, std::span<const uint8_t, 16> iv, std::span<uint8_t> data);
absl::Status aes256_cbc_decrypt(const key256& key, std::span<const uint8_t, 16> iv, std::span<uint8_t> data);

// Cryptographically random bytes (the host half of the handshake).
absl::Status random_bytes(std::span<uint8_t> out);

// Compares in time independent of where the inputs differ.
bool equal_constant_time(std::span<const uint8_t> a, std::span<const uint8_t> b);

}  // namespace toolhost::kdnet
