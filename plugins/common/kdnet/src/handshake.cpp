#include "toolhost/kdnet/handshake.hpp"

#include <algorithm>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>

namespace toolhost::kdnet {

absl::StatusOr<poke> parse_poke(std::span<const uint8_t> body) {
  if (body.size() < kPokePortOffset + 2) {
    return absl::InvalidArgumentError(absl::StrCat("KDNET poke of ", body.size(), " bytes is too short"));
  }
  if (body[0] != 1 || body[1] != 1) {
    return absl::InvalidArgumentError(absl::StrCat("KDNET control body [", body[0], ",", body[1], "] is not a poke"));
  }
  poke p;
  std::copy_n(body.begin() + 2, p.client_key.size(), p.client_key.begin());
  p.host_port = static_cast<uint16_t>(body[kPokePortOffset] << 8 | body[kPokePortOffset + 1]);
  return p;
}

std::vector<uint8_t> response_body(const poke& p, std::span<const uint8_t, 32> host_random) {
  std::vector<uint8_t> body(kResponseSize, 0);
  body[0] = 1;
  body[1] = 2;
  std::copy(p.client_key.begin(), p.client_key.end(), body.begin() + 2);
  std::copy(host_random.begin(), host_random.end(), body.begin() + 34);
  return body;
}

}  // namespace toolhost::kdnet
