// The tuning options every KD backend's open() accepts in options_json (kd over KDCOM, kdnet):
// ack_timeout_ms, retries, request_timeout_ms, attach_wait_ms, read_cache.
#pragma once

#include <chrono>
#include <string_view>

#include <absl/status/status.h>

#include <toolhost/kd/target.h>

namespace toolhost::kd {

struct link_tuning {
  std::chrono::milliseconds ack_timeout;  // wait for an ACK before sending again
  int retries;                            // retransmissions before a send gives up
};

// Reads the options present in `options_json` (null or empty: none) over the values already in
// `link` and `target`. The error is one sentence naming the option and its range, or saying the
// text is not a JSON object; `backend` ("kd", "kdnet") names whose options they are.
absl::Status read_open_options(const char* options_json, std::string_view backend, link_tuning& link,
                               target_options& target);

// The same over a backend's own link options, any type with `ack_timeout` and `retries`
// (kd::kdcom_options, kdnet::kd_link_options).
template <typename LinkOptions>
absl::Status read_open_options(const char* options_json, std::string_view backend, LinkOptions& link,
                               target_options& target) {
  link_tuning tuning{link.ack_timeout, link.retries};
  if (absl::Status s = read_open_options(options_json, backend, tuning, target); !s.ok()) return s;
  link.ack_timeout = tuning.ack_timeout;
  link.retries = tuning.retries;
  return absl::OkStatus();
}

}  // namespace toolhost::kd
