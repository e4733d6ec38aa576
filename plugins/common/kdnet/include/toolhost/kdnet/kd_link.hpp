// KD over KDNET: the `toolhost::kd::link` that lets the shared KD state machine (plugins/common/kd)
// run over an encrypted UDP `endpoint`. One KD packet travels per datagram, with the 16-byte KD
// header and no 0xAA trailer. Packet ids follow the KDNET dialect: ours start at 0x80000000 and
// step by 2, an ACK must echo our id exactly, and the target's ids only grow, so one at or below
// the highest accepted is a repeat (acknowledged, dropped). Every transmission, retransmissions
// included, is a new datagram with a new KDNET sequence number, because the target drops repeats.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "toolhost/kd/link.h"
#include "toolhost/kdnet/endpoint.hpp"

namespace toolhost::kdnet {

inline constexpr uint32_t kKdnetInitialPacketId = 0x80000000;

struct kd_link_options {
  std::chrono::milliseconds ack_timeout{250};     // wait for an ACK before sending again
  std::chrono::milliseconds breakin_repeat{300};  // send an unanswered break-in again
  int retries = 24;                               // as WinDbg and ntoseye do over KDNET
};

class kd_link final : public toolhost::kd::link {
 public:
  kd_link(std::unique_ptr<endpoint> wire, kd_link_options options = {});

  absl::Status send(uint16_t type, std::span<const uint8_t> payload) override;
  absl::StatusOr<toolhost::kd::inbound> receive(std::chrono::milliseconds timeout) override;
  absl::Status break_in() override;
  absl::Status reset() override;
  void shutdown() override;
  // bad_packets also counts the datagrams the endpoint refused (authentication, not KDNET).
  toolhost::kd::link_stats stats() const override;
  std::string describe() const override;

  endpoint& wire() { return *wire_; }

 private:
  using clock = std::chrono::steady_clock;
  struct frame {
    enum class kind { data, control, other } what = kind::other;
    uint16_t type = 0;
    uint32_t id = 0;
    std::vector<uint8_t> payload;
  };
  // One KD frame before `deadline` (nullopt when none came). A reboot of the target resets the
  // ids here and is reported through the next accepted packet; `*rebooted` tells the caller.
  absl::StatusOr<std::optional<frame>> next_frame(clock::time_point deadline, bool* rebooted);
  absl::Status on_data(frame& f);
  absl::Status on_reset();
  absl::Status send_control(uint16_t type, uint32_t id);
  void restart_ids();
  void count(uint64_t toolhost::kd::link_stats::*field);

  std::unique_ptr<endpoint> wire_;
  kd_link_options options_;
  uint32_t out_id_ = kKdnetInitialPacketId;
  std::optional<uint32_t> in_mark_;
  // A break-in is a lone datagram nobody acknowledges; over a lossy network it is repeated until
  // the target reports a state change.
  std::atomic<bool> breakin_wanted_{false};
  std::atomic<int64_t> last_breakin_ns_{0};
  bool restarted_pending_ = false;
  clock::time_point last_reset_sent_{};
  std::deque<toolhost::kd::inbound> queue_;
  mutable std::mutex stats_mutex_;
  toolhost::kd::link_stats stats_;
};

}  // namespace toolhost::kdnet
