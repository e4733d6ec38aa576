#include "toolhost/kdnet/kd_link.hpp"

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>

#include "toolhost/kd/bytes.h"
#include "toolhost/kd/protocol.h"

namespace toolhost::kdnet {
namespace kd = toolhost::kd;

namespace {

std::vector<uint8_t> encode_packet(uint32_t leader, uint16_t type, uint32_t id, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(kd::kHeaderSize + payload.size(), 0);
  uint32_t checksum = 0;
  for (uint8_t b : payload) checksum += b;
  kd::put_u32(out, 0, leader);
  kd::put_u16(out, 4, type);
  kd::put_u16(out, 6, static_cast<uint16_t>(payload.size()));
  kd::put_u32(out, 8, id);
  kd::put_u32(out, 12, leader == kd::kDataLeader ? checksum : 0);
  std::copy(payload.begin(), payload.end(), out.begin() + kd::kHeaderSize);
  return out;
}

}  // namespace

kd_link::kd_link(std::unique_ptr<endpoint> wire, kd_link_options options) : wire_(std::move(wire)), options_(options) {}

void kd_link::count(uint64_t kd::link_stats::*field) {
  std::lock_guard lock(stats_mutex_);
  ++(stats_.*field);
}

kd::link_stats kd_link::stats() const {
  kd::link_stats s;
  {
    std::lock_guard lock(stats_mutex_);
    s = stats_;
  }
  // Datagrams the endpoint refused (failed authentication, not KDNET) are this wire's bad packets.
  const endpoint_stats w = wire_->stats();
  s.bad_packets += w.rejected_unauthenticated + w.rejected_malformed;
  return s;
}

std::string kd_link::describe() const { return "kdnet udp " + wire_->local_address(); }

void kd_link::restart_ids() {
  out_id_ = kKdnetInitialPacketId;
  in_mark_.reset();
}

absl::Status kd_link::send_control(uint16_t type, uint32_t id) {
  const auto bytes = encode_packet(kd::kControlLeader, type, id, {});
  return wire_->send(bytes);
}

absl::StatusOr<std::optional<kd_link::frame>> kd_link::next_frame(clock::time_point deadline, bool* rebooted) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (breakin_wanted_) {
      const auto since = clock::now().time_since_epoch() - std::chrono::nanoseconds(last_breakin_ns_.load());
      if (since >= options_.breakin_repeat) (void)break_in();
      left = std::min(left, options_.breakin_repeat);
    }
    auto event = wire_->receive(std::max(left, std::chrono::milliseconds(0)));
    if (!event.ok()) {
      if (absl::IsCancelled(event.status())) return absl::UnavailableError("The KDNET link was shut down.");
      return event.status();
    }
    if (!event->has_value()) {
      if (clock::now() < deadline) continue;  // woke early to repeat a break-in
      return std::optional<frame>{};
    }
    link_event& e = **event;
    if (e.what == link_event::kind::rebooted) {
      // A new boot: its ids start over and it remembers none of our breakpoints.
      restart_ids();
      restarted_pending_ = true;
      if (rebooted) *rebooted = true;
      continue;
    }
    const std::span<const uint8_t> bytes(e.bytes);
    const uint32_t leader = kd::get_u32(bytes, 0);
    frame f;
    if (bytes.size() >= kd::kHeaderSize && (leader == kd::kDataLeader || leader == kd::kControlLeader)) {
      f.type = kd::get_u16(bytes, 4);
      const uint16_t length = kd::get_u16(bytes, 6);
      f.id = kd::get_u32(bytes, 8);
      if (leader == kd::kControlLeader) {
        f.what = frame::kind::control;
        return std::optional<frame>(std::move(f));
      }
      if (length <= bytes.size() - kd::kHeaderSize) {
        uint32_t sum = 0;
        for (size_t i = 0; i < length; ++i) sum += bytes[kd::kHeaderSize + i];
        if (sum == kd::get_u32(bytes, 12)) {
          f.what = frame::kind::data;
          f.payload.assign(bytes.begin() + kd::kHeaderSize, bytes.begin() + kd::kHeaderSize + length);
          return std::optional<frame>(std::move(f));
        }
      }
      count(&kd::link_stats::bad_packets);
      return std::optional<frame>(std::move(f));  // kind::other: answered with RESEND
    }
    // The target's connection check (an unused packet, leader 0): WinDbg answers it with
    // RESEND, which makes the target send what it holds again.
    f.what = frame::kind::other;
    return std::optional<frame>(std::move(f));
  }
}

absl::Status kd_link::on_reset() {
  count(&kd::link_stats::resets);
  restart_ids();
  if (clock::now() - last_reset_sent_ > options_.ack_timeout) {
    last_reset_sent_ = clock::now();
    return send_control(kd::kTypeReset, kKdnetInitialPacketId);
  }
  return absl::OkStatus();
}

absl::Status kd_link::on_data(frame& f) {
  // Our acknowledgement may have been lost; the target then repeats with the same id.
  if (in_mark_ && f.id <= *in_mark_) {
    count(&kd::link_stats::duplicates);
    return send_control(kd::kTypeAcknowledge, f.id);
  }
  in_mark_ = f.id;
  count(&kd::link_stats::received);
  if (f.type == kd::kTypeStateChange64) breakin_wanted_ = false;
  if (auto s = send_control(kd::kTypeAcknowledge, f.id); !s.ok() && !absl::IsFailedPrecondition(s)) return s;
  // The reboot is reported with the new boot's first state change: the state machine reads the
  // flag there (a DbgPrint before it would swallow it).
  const bool restarted = restarted_pending_ && f.type == kd::kTypeStateChange64;
  if (restarted) restarted_pending_ = false;
  queue_.push_back(kd::inbound{kd::packet{f.type, std::move(f.payload)}, restarted});
  return absl::OkStatus();
}

absl::Status kd_link::send(uint16_t type, std::span<const uint8_t> payload) {
  if (payload.size() > kd::kMaxPayload) {
    return absl::InvalidArgumentError(
        absl::StrCat("A KD packet holds at most ", kd::kMaxPayload, " bytes, not ", payload.size(), "."));
  }
  count(&kd::link_stats::sent);
  for (int attempt = 0; attempt <= options_.retries; ++attempt) {
    if (attempt > 0) count(&kd::link_stats::retransmits);
    // A new datagram, hence a new KDNET sequence, on every attempt. Before the handshake the
    // endpoint solicits a poke instead, and we wait as for a lost packet.
    const auto bytes = encode_packet(kd::kDataLeader, type, out_id_, payload);
    if (auto s = wire_->send(bytes); !s.ok() && !absl::IsFailedPrecondition(s)) return s;
    const auto deadline = clock::now() + options_.ack_timeout;
    bool retransmit = false;
    while (!retransmit) {
      bool rebooted = false;
      auto got = next_frame(deadline, &rebooted);
      if (!got.ok()) return got.status();
      if (rebooted) {
        // The packet went out, and the boot that could acknowledge it is gone. Not an error
        // here: a Reboot request did its job, and anything else learns of the reboot from the
        // new boot's state change, which carries target_restarted.
        return absl::OkStatus();
      }
      if (!got->has_value()) break;  // no ACK in time: send again
      frame& f = **got;
      switch (f.what) {
        case frame::kind::data:
          if (auto s = on_data(f); !s.ok()) return s;
          break;
        case frame::kind::other:
          if (auto s = send_control(kd::kTypeResend, 0); !s.ok()) return s;
          break;
        case frame::kind::control:
          if (f.type == kd::kTypeAcknowledge && f.id == out_id_) {
            out_id_ += 2;
            return absl::OkStatus();
          }
          if (f.type == kd::kTypeResend) {
            count(&kd::link_stats::resend_requests);
            retransmit = true;
          }
          if (f.type == kd::kTypeReset) {
            if (auto s = on_reset(); !s.ok()) return s;
            retransmit = true;
          }
          break;
      }
    }
  }
  return absl::DeadlineExceededError(absl::StrCat("The target did not acknowledge a KD packet after ",
                                                  options_.retries + 1, " tries over ", describe(), "."));
}

absl::StatusOr<kd::inbound> kd_link::receive(std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  while (queue_.empty()) {
    auto got = next_frame(deadline, nullptr);
    if (!got.ok()) return got.status();
    if (!got->has_value()) return absl::DeadlineExceededError("No KD packet arrived in time.");
    frame& f = **got;
    if (f.what == frame::kind::data) {
      if (auto s = on_data(f); !s.ok()) return s;
    } else if (f.what == frame::kind::other) {
      if (auto s = send_control(kd::kTypeResend, 0); !s.ok() && !absl::IsFailedPrecondition(s)) return s;
    } else if (f.type == kd::kTypeReset) {
      if (auto s = on_reset(); !s.ok() && !absl::IsFailedPrecondition(s)) return s;
    }
  }
  kd::inbound next = std::move(queue_.front());
  queue_.pop_front();
  return next;
}

absl::Status kd_link::break_in() {
  breakin_wanted_ = true;
  last_breakin_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
  return wire_->send_breakin();
}

absl::Status kd_link::reset() {
  restart_ids();
  last_reset_sent_ = clock::now();
  count(&kd::link_stats::resets);
  auto s = send_control(kd::kTypeReset, kKdnetInitialPacketId);
  return absl::IsFailedPrecondition(s) ? absl::OkStatus() : s;
}

void kd_link::shutdown() { wire_->close(); }

}  // namespace toolhost::kdnet
