// KDCOM framing: a 16-byte little-endian header (leader, type, byte count, packet id,
// checksum), the payload, and the 0xAA trailing byte on data packets. `kdcom_decoder` turns an
// arbitrary byte stream (noise, truncation, corruption) into frames; it never trusts a length
// it has not checked and never grows without bound.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

namespace toolhost::kd {

// The 32-bit byte sum KDCOM uses as a checksum.
uint32_t kdcom_checksum(std::span<const uint8_t> bytes);

// A data packet with leader, header, payload and trailer.
std::vector<uint8_t> encode_data_frame(uint16_t type, uint32_t id, std::span<const uint8_t> payload);
// A control packet (ACK / RESEND / RESET): header only, byte count and checksum zero.
std::vector<uint8_t> encode_control_frame(uint16_t type, uint32_t id);

struct kdcom_frame {
  enum class kind {
    data,      // a well-formed data packet
    control,   // ACK, RESEND or RESET
    bad_data,  // a data header whose payload failed the checksum or trailer: ask for a resend
    break_in,  // a lone 0x62 byte outside any packet
  };
  kind what = kind::data;
  uint16_t type = 0;
  uint32_t id = 0;
  std::vector<uint8_t> payload;
};

class kdcom_decoder {
 public:
  void feed(std::span<const uint8_t> bytes);
  // The next complete frame, or nothing until more bytes arrive.
  std::optional<kdcom_frame> next();
  // Drops a partial frame that stalled (its length was corrupted or the sender went away),
  // so that scanning resumes at the next byte.
  void drop_partial();
  bool has_partial() const { return !buffer_.empty(); }
  uint64_t skipped_bytes() const { return skipped_; }

 private:
  std::deque<uint8_t> buffer_;
  uint64_t skipped_ = 0;
};

}  // namespace toolhost::kd
