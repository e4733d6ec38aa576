#include "toolhost/kdnet/crypto.hpp"

#include <memory>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace toolhost::kdnet {
namespace {

struct md_ctx_free {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
struct mac_free {
  void operator()(EVP_MAC* p) const { EVP_MAC_free(p); }
};
struct mac_ctx_free {
  void operator()(EVP_MAC_CTX* p) const { EVP_MAC_CTX_free(p); }
};
struct cipher_ctx_free {
  void operator()(EVP_CIPHER_CTX* p) const { EVP_CIPHER_CTX_free(p); }
};

// Fetched once: EVP_MAC_fetch walks the provider tables, which is slow per datagram.
EVP_MAC* hmac_algorithm() {
  static std::unique_ptr<EVP_MAC, mac_free> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  return mac.get();
}

// Explicitly fetched once: the implicit EVP_aes_256_cbc() lookup on every init costs more
// than the cipher itself on a small datagram.
const EVP_CIPHER* aes256_cbc_algorithm() {
  static const EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, "AES-256-CBC", nullptr);
  return cipher;
}

absl::Status aes256_cbc(bool encrypt, const key256& key, std::span<const uint8_t, 16> iv, std::span<uint8_t> data) {
  if (data.size() % 16 != 0) return absl::InvalidArgumentError("AES-CBC data is not a whole number of blocks");
  std::unique_ptr<EVP_CIPHER_CTX, cipher_ctx_free> ctx(EVP_CIPHER_CTX_new());
  if (!ctx) return absl::ResourceExhaustedError("EVP_CIPHER_CTX_new failed");
  if (EVP_CipherInit_ex2(ctx.get(), aes256_cbc_algorithm(), key.data(), iv.data(), encrypt ? 1 : 0, nullptr) != 1) {
    return absl::InternalError("AES-256-CBC initialisation failed");
  }
  EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
  int produced = 0;
  if (!data.empty() &&
      EVP_CipherUpdate(ctx.get(), data.data(), &produced, data.data(), static_cast<int>(data.size())) != 1) {
    return absl::InternalError("AES-256-CBC failed");
  }
  int tail = 0;
  if (EVP_CipherFinal_ex(ctx.get(), data.data() + produced, &tail) != 1) {
    return absl::InternalError("AES-256-CBC finalisation failed");
  }
  return absl::OkStatus();
}

}  // namespace

digest256 sha256(std::initializer_list<std::span<const uint8_t>> parts) {
  digest256 out{};
  std::unique_ptr<EVP_MD_CTX, md_ctx_free> ctx(EVP_MD_CTX_new());
  unsigned int size = 0;
  if (!ctx || EVP_DigestInit_ex2(ctx.get(), EVP_sha256(), nullptr) != 1) return out;
  for (auto part : parts) EVP_DigestUpdate(ctx.get(), part.data(), part.size());
  EVP_DigestFinal_ex(ctx.get(), out.data(), &size);
  return out;
}

digest256 hmac_sha256(const key256& key, std::span<const uint8_t> data) {
  digest256 out{};
  std::unique_ptr<EVP_MAC_CTX, mac_ctx_free> ctx(EVP_MAC_CTX_new(hmac_algorithm()));
  if (!ctx) return out;
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end(),
  };
  size_t size = 0;
  if (EVP_MAC_init(ctx.get(), key.data(), key.size(), params) != 1) return out;
  EVP_MAC_update(ctx.get(), data.data(), data.size());
  EVP_MAC_final(ctx.get(), out.data(), &size, out.size());
  return out;
}

absl::Status aes256_cbc_encrypt(const key256& key, std::span<const uint8_t, 16> iv, std::span<uint8_t> data) {
  return aes256_cbc(true, key, iv, data);
}

absl::Status aes256_cbc_decrypt(const key256& key, std::span<const uint8_t, 16> iv, std::span<uint8_t> data) {
  return aes256_cbc(false, key, iv, data);
}

absl::Status random_bytes(std::span<uint8_t> out) {
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) {
    return absl::InternalError("the system random generator failed");
  }
  return absl::OkStatus();
}

bool equal_constant_time(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace toolhost::kdnet
