#include "host/mcp/input_required.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <absl/status/status.h>
#include <absl/strings/escaping.h>
#include <toolhost/sdk/strings.hpp>

#include <array>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_set>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp::input_required {
namespace {

constexpr auto kLifetime = std::chrono::minutes(10);
constexpr const char* kKeyMember = "io.toolhost/inputKey";
// States redeemed within their lifetime, remembered until they expire: 32768 answered rounds in
// ten minutes (55 a second) is far beyond what people answer, and holds ~3 MiB at most.
constexpr size_t kMaxRedeemed = 32768;

absl::string_view view(std::string_view s) { return absl::string_view(s.data(), s.size()); }

const std::array<unsigned char, 32>& process_key() {
  static std::array<unsigned char, 32> key;
  static std::once_flag once;
  std::call_once(once, [] {
    if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) std::abort();  // no state could be trusted
  });
  return key;
}

std::string mac(std::string_view payload) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const auto& key = process_key();
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(payload.data()),
       payload.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string digest_hex(std::string_view text) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), out, &len, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(out), len));
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(raw.size())) != 1) std::abort();
  return absl::BytesToHexString(raw);
}

// Each state is good for one round: the spec's expiry and binding bound a replay, but only the
// server can make a state single-use, and a state that carries the person's "yes" to a call
// must not run the call twice. The nonces of redeemed states are kept until they would expire.
class redeemed_states {
 public:
  // False when `nonce` was redeemed already, or when too many unexpired ones are held to tell.
  absl::Status redeem(const std::string& nonce, int64_t expires_ms) {
    std::lock_guard lock(mutex_);
    const int64_t now = now_ms();
    while (!by_expiry_.empty() && by_expiry_.begin()->first < now) {
      nonces_.erase(by_expiry_.begin()->second);
      by_expiry_.erase(by_expiry_.begin());
    }
    if (nonces_.count(nonce) != 0) return absl::AlreadyExistsError("was used already: each one answers one round");
    if (nonces_.size() >= kMaxRedeemed) {
      return absl::ResourceExhaustedError(cat("cannot be checked for reuse now (", kMaxRedeemed,
                                              " rounds were answered in the last ",
                                              std::chrono::minutes(kLifetime).count(), " minutes)"));
    }
    nonces_.insert(nonce);
    by_expiry_.emplace(expires_ms, nonce);
    return absl::OkStatus();
  }

 private:
  std::mutex mutex_;
  std::unordered_set<std::string> nonces_;
  std::multimap<int64_t, std::string> by_expiry_;
};

redeemed_states& redeemed() {
  static redeemed_states* states = new redeemed_states;  // never destroyed: used from any thread until exit
  return *states;
}

}  // namespace

std::string binding(std::string_view server, std::string_view method, std::string_view name,
                    std::string_view arguments_json) {
  // Lengths first, so that no two different calls give the same text.
  return cat(server.size(), ":", server, method.size(), ":", method, name.size(), ":", name, arguments_json);
}

std::string seal(std::string_view bound, const std::vector<std::string>& asked, const answers& given) {
  std::string payload = cat(R"({"b":)", sdk::quote(digest_hex(bound)), R"(,"n":")", random_hex(16), R"(","exp":)",
                            now_ms() + std::chrono::milliseconds(kLifetime).count(), R"(,"k":[)");
  for (size_t i = 0; i < asked.size(); ++i) append(payload, i ? "," : "", sdk::quote(asked[i]));
  payload += R"(],"a":{)";
  bool first = true;
  for (const auto& [key, answer] : given) {
    append(payload, first ? "" : ",", sdk::quote(key), ":", answer);
    first = false;
  }
  payload += "}}";
  return cat(absl::WebSafeBase64Escape(payload), ".", absl::WebSafeBase64Escape(mac(payload)));
}

absl::StatusOr<answers> open(std::string_view state, std::string_view bound, const rapidjson::Value* input_responses) {
  const auto refused = [](std::string_view why) {
    return absl::InvalidArgumentError(
        cat("Invalid params: requestState ", why, "; call again without requestState and inputResponses"));
  };
  const size_t dot = state.find('.');
  std::string payload;
  std::string tag;
  if (dot == std::string_view::npos || !absl::WebSafeBase64Unescape(view(state.substr(0, dot)), &payload) ||
      !absl::WebSafeBase64Unescape(view(state.substr(dot + 1)), &tag)) {
    return refused("is not one this server issued");
  }
  const std::string expected = mac(payload);
  if (tag.size() != expected.size() || CRYPTO_memcmp(tag.data(), expected.data(), tag.size()) != 0) {
    return refused("failed its integrity check (it was changed, or another server issued it)");
  }
  auto doc = sdk::parse_json(payload);
  if (!doc || !doc->IsObject()) return refused("is not one this server issued");
  const auto b = sdk::string_member(*doc, "b");
  if (!b || *b != digest_hex(bound)) return refused("belongs to another call (tool, prompt or arguments differ)");
  const rapidjson::Value* exp = sdk::member(*doc, "exp");
  if (exp == nullptr || !exp->IsInt64() || exp->GetInt64() < now_ms()) return refused("has expired");
  const auto nonce = sdk::string_member(*doc, "n");
  if (!nonce) return refused("is not one this server issued");
  if (absl::Status s = redeemed().redeem(std::string(*nonce), exp->GetInt64()); !s.ok())
    return refused(std::string(s.message()));
  answers out;
  if (const rapidjson::Value* a = sdk::member(*doc, "a"); a != nullptr && a->IsObject()) {
    for (const auto& m : a->GetObject()) out[m.name.GetString()] = sdk::to_json(m.value);
  }
  const rapidjson::Value* k = sdk::member(*doc, "k");
  if (k != nullptr && k->IsArray() && input_responses != nullptr && input_responses->IsObject()) {
    for (const auto& key : k->GetArray()) {
      if (!key.IsString()) continue;
      const rapidjson::Value* answer = sdk::member(*input_responses, key.GetString());
      if (answer != nullptr && answer->IsObject()) out[key.GetString()] = sdk::to_json(*answer);
    }
  }
  return out;
}

std::string result(const std::vector<std::pair<std::string, std::string>>& requests, std::string_view state) {
  std::string out = R"({"resultType":"input_required","inputRequests":{)";
  for (size_t i = 0; i < requests.size(); ++i)
    append(out, i ? "," : "", sdk::quote(requests[i].first), ":", requests[i].second);
  append(out, R"(},"requestState":)", sdk::quote(state), "}");
  return out;
}

std::string take_key(std::string& params_json) {
  if (params_json.find(kKeyMember) == std::string::npos) return "";
  auto doc = sdk::parse_json(params_json);
  if (!doc || !doc->IsObject()) return "";
  auto meta = doc->FindMember("_meta");
  if (meta == doc->MemberEnd() || !meta->value.IsObject()) return "";
  auto key = meta->value.FindMember(kKeyMember);
  if (key == meta->value.MemberEnd() || !key->value.IsString()) return "";
  std::string name = key->value.GetString();
  meta->value.RemoveMember(key);
  if (meta->value.ObjectEmpty()) doc->RemoveMember(meta);
  params_json = sdk::to_json(*doc);
  return name;
}

}  // namespace toolhost::mcp::input_required
