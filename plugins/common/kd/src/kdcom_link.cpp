#include "toolhost/kd/kdcom_link.h"

#include <absl/strings/str_cat.h>

#include "toolhost/kd/protocol.h"

namespace toolhost::kd {

kdcom_link::kdcom_link(std::unique_ptr<byte_stream> stream, kdcom_options options)
    : stream_(std::move(stream)), options_(options), out_id_(kInitialPacketId) {}

void kdcom_link::count(uint64_t link_stats::*field) {
  std::lock_guard lock(stats_mutex_);
  ++(stats_.*field);
}

link_stats kdcom_link::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

std::string kdcom_link::describe() const { return "kdcom " + stream_->name(); }

absl::Status kdcom_link::send_control(uint16_t type, uint32_t id) {
  const auto frame = encode_control_frame(type, id);
  return stream_->write_all(frame);
}

absl::StatusOr<std::optional<kdcom_frame>> kdcom_link::read_frame(clock::time_point deadline) {
  uint8_t chunk[4096];
  while (true) {
    if (shut_) return absl::UnavailableError("The KD link was shut down.");
    if (auto frame = decoder_.next()) return frame;
    const auto now = clock::now();
    if (decoder_.has_partial() && now - last_byte_ > options_.stall) {
      decoder_.drop_partial();
      continue;
    }
    if (now >= deadline) return std::optional<kdcom_frame>{};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) + std::chrono::milliseconds(1);
    if (decoder_.has_partial()) wait = std::min(wait, options_.stall);
    auto n = stream_->read_some(chunk, wait);
    if (!n.ok()) return n.status();
    if (*n > 0) {
      last_byte_ = clock::now();
      decoder_.feed(std::span<const uint8_t>(chunk, *n));
    }
  }
}

absl::Status kdcom_link::on_reset() {
  count(&link_stats::resets);
  out_id_ = kInitialPacketId;
  last_accepted_.reset();
  awaiting_sync_ = true;
  // Answer the target's RESET unless it is the answer to ours.
  if (clock::now() - last_reset_sent_ > options_.ack_timeout) {
    last_reset_sent_ = clock::now();
    return send_control(kTypeReset, 0);
  }
  return absl::OkStatus();
}

absl::Status kdcom_link::on_data(kdcom_frame& frame) {
  const uint32_t id = frame.id;
  const uint32_t bare = id & ~kSyncPacketId;
  // A repeat is the packet taken last, sent again because our ACK was lost: the same id and the
  // same bytes. The same id with other bytes is new: a kddll target that took a packet of ours
  // as the ACK of one we never got moves on to its next id all the same, so ids alone cannot
  // tell (with two of them, the "next" one is the last one again).
  if (last_accepted_ && bare == (*last_accepted_ & ~kSyncPacketId) && frame.type == last_type_ &&
      frame.payload == last_payload_) {
    count(&link_stats::duplicates);
    return send_control(kTypeAcknowledge, bare);
  }
  bool restarted = false;
  if ((id & kSyncPacketId) != 0) {
    // The target's ids started over and none of its packets was acknowledged since. After a
    // RESET that holds for its packets before the RESET (its first after a boot) and after it,
    // until one without SYNC shows it is past; any other time it is a new boot, which expects
    // our first id again.
    restarted = !awaiting_sync_;
    if (restarted) out_id_ = kInitialPacketId;
  } else {
    awaiting_sync_ = false;
  }
  last_accepted_ = id;
  last_type_ = frame.type;
  last_payload_ = frame.payload;
  count(&link_stats::received);
  if (auto s = send_control(kTypeAcknowledge, bare); !s.ok()) return s;
  queue_.push_back(inbound{packet{frame.type, std::move(frame.payload)}, restarted});
  return absl::OkStatus();
}

absl::Status kdcom_link::send(uint16_t type, std::span<const uint8_t> payload) {
  if (payload.size() > kMaxPayload) {
    return absl::InvalidArgumentError(
        absl::StrCat("A KD packet holds at most ", kMaxPayload, " bytes, not ", payload.size(), "."));
  }
  count(&link_stats::sent);
  // A target that answers every packet with RESET (another debugger on the line, a noisy one)
  // would otherwise get our packet back at once for each RESET, and its RESET for each of ours:
  // an exchange at wire speed that fills both sides' buffers until each blocks on its write.
  // The first RESET is answered at once; the later ones wait for the attempt's ACK timeout.
  bool reset_answered = false;
  for (int attempt = 0; attempt <= options_.retries; ++attempt) {
    if (attempt > 0) count(&link_stats::retransmits);
    const auto frame = encode_data_frame(type, out_id_, payload);
    if (auto s = stream_->write_all(frame); !s.ok()) return s;
    const auto deadline = clock::now() + options_.ack_timeout;
    bool retransmit = false;
    while (!retransmit) {
      auto got = read_frame(deadline);
      if (!got.ok()) return got.status();
      if (!got->has_value()) break;  // timed out: send again
      kdcom_frame& f = **got;
      switch (f.what) {
        case kdcom_frame::kind::data: {
          const bool print = f.type == kTypeDebugIo;
          const size_t queued = queue_.size();
          if (auto s = on_data(f); !s.ok()) return s;
          // A halted target prints only while it carries out a packet of ours: it has ours, and
          // its ACK was lost. Sending ours again now would be taken by kddll, which waits for
          // the ACK of that print, as the ACK: the print would be lost for good.
          if (print && queue_.size() > queued && !queue_.back().target_restarted) {
            out_id_ = (out_id_ ^ 1u) & ~kSyncPacketId;
            return absl::OkStatus();
          }
          break;
        }
        case kdcom_frame::kind::bad_data:
          count(&link_stats::bad_packets);
          if (auto s = send_control(kTypeResend, 0); !s.ok()) return s;
          break;
        case kdcom_frame::kind::break_in: break;
        case kdcom_frame::kind::control:
          if (f.type == kTypeAcknowledge && (f.id & ~kSyncPacketId) == (out_id_ & ~kSyncPacketId)) {
            out_id_ = (out_id_ ^ 1u) & ~kSyncPacketId;
            return absl::OkStatus();
          }
          if (f.type == kTypeResend) {
            count(&link_stats::resend_requests);
            retransmit = true;
          }
          if (f.type == kTypeReset) {
            if (auto s = on_reset(); !s.ok()) return s;
            retransmit = !reset_answered;
            reset_answered = true;
          }
          break;
      }
    }
  }
  return absl::DeadlineExceededError(absl::StrCat("The target did not acknowledge a KD packet after ",
                                                  options_.retries + 1, " tries over ", describe(), "."));
}

absl::StatusOr<inbound> kdcom_link::receive(std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  while (queue_.empty()) {
    auto got = read_frame(deadline);
    if (!got.ok()) return got.status();
    if (!got->has_value()) return absl::DeadlineExceededError("No KD packet arrived in time.");
    kdcom_frame& f = **got;
    if (f.what == kdcom_frame::kind::data) {
      if (auto s = on_data(f); !s.ok()) return s;
    } else if (f.what == kdcom_frame::kind::bad_data) {
      count(&link_stats::bad_packets);
      if (auto s = send_control(kTypeResend, 0); !s.ok()) return s;
    } else if (f.what == kdcom_frame::kind::control && f.type == kTypeReset) {
      if (auto s = on_reset(); !s.ok()) return s;
    }
  }
  inbound next = std::move(queue_.front());
  queue_.pop_front();
  return next;
}

absl::Status kdcom_link::break_in() {
  const uint8_t b = kBreakInByte;
  return stream_->write_all(std::span<const uint8_t>(&b, 1));
}

absl::Status kdcom_link::reset() {
  out_id_ = kInitialPacketId;
  last_accepted_.reset();
  awaiting_sync_ = true;
  last_reset_sent_ = clock::now();
  count(&link_stats::resets);
  return send_control(kTypeReset, 0);
}

void kdcom_link::shutdown() {
  shut_ = true;
  stream_->shutdown();
}

}  // namespace toolhost::kd
