// KDCOM over a byte stream: the `link` of the serial protocol. Packet ids follow kddll: ours
// start at 0x80800000 and toggle bit 0 on every acknowledgement; the target's carry the SYNC
// bit (0x800) after it (re)starts its stream; a repeat of the packet taken last is
// acknowledged and dropped; a bad checksum is answered with RESEND; RESET resynchronizes both
// sides.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "toolhost/kd/byte_stream.h"
#include "toolhost/kd/kdcom_frame.h"
#include "toolhost/kd/link.h"

namespace toolhost::kd {

struct kdcom_options {
  std::chrono::milliseconds ack_timeout{250};  // wait for an ACK before retransmitting
  int retries = 5;                             // retransmissions before send() gives up
  std::chrono::milliseconds stall{100};        // a partial frame this quiet is dropped
};

class kdcom_link final : public link {
 public:
  kdcom_link(std::unique_ptr<byte_stream> stream, kdcom_options options);

  absl::Status send(uint16_t type, std::span<const uint8_t> payload) override;
  absl::StatusOr<inbound> receive(std::chrono::milliseconds timeout) override;
  absl::Status break_in() override;
  absl::Status reset() override;
  void shutdown() override;
  link_stats stats() const override;
  std::string describe() const override;

 private:
  using clock = std::chrono::steady_clock;
  // The next frame before `deadline`, or nothing.
  absl::StatusOr<std::optional<kdcom_frame>> read_frame(clock::time_point deadline);
  absl::Status on_data(kdcom_frame& frame);
  absl::Status on_reset();
  absl::Status send_control(uint16_t type, uint32_t id);
  void count(uint64_t link_stats::*field);

  std::unique_ptr<byte_stream> stream_;
  kdcom_options options_;
  kdcom_decoder decoder_;
  std::deque<inbound> queue_;
  uint32_t out_id_;
  std::optional<uint32_t> last_accepted_;  // the last data packet taken: a repeat of it is dropped
  uint16_t last_type_ = 0;
  std::vector<uint8_t> last_payload_;
  bool awaiting_sync_ = false;  // a RESET happened: SYNC ids are expected until one without it
  clock::time_point last_reset_sent_{};
  clock::time_point last_byte_{};
  std::atomic<bool> shut_{false};
  mutable std::mutex stats_mutex_;
  link_stats stats_;
};

}  // namespace toolhost::kd
