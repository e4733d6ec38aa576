#include "toolhost/kd/kdcom_frame.h"

#include "toolhost/kd/bytes.h"
#include "toolhost/kd/protocol.h"

namespace toolhost::kd {

uint32_t kdcom_checksum(std::span<const uint8_t> bytes) {
  uint32_t sum = 0;
  for (uint8_t b : bytes) sum += b;
  return sum;
}

namespace {
std::vector<uint8_t> header(uint32_t leader, uint16_t type, uint16_t count, uint32_t id, uint32_t sum) {
  std::vector<uint8_t> out(kHeaderSize);
  put_u32(out, 0, leader);
  put_u16(out, 4, type);
  put_u16(out, 6, count);
  put_u32(out, 8, id);
  put_u32(out, 12, sum);
  return out;
}
}  // namespace

std::vector<uint8_t> encode_data_frame(uint16_t type, uint32_t id, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out =
      header(kDataLeader, type, static_cast<uint16_t>(payload.size()), id, kdcom_checksum(payload));
  out.insert(out.end(), payload.begin(), payload.end());
  out.push_back(kTrailingByte);
  return out;
}

std::vector<uint8_t> encode_control_frame(uint16_t type, uint32_t id) { return header(kControlLeader, type, 0, id, 0); }

void kdcom_decoder::feed(std::span<const uint8_t> bytes) { buffer_.insert(buffer_.end(), bytes.begin(), bytes.end()); }

void kdcom_decoder::drop_partial() {
  if (buffer_.empty()) return;
  buffer_.pop_front();
  ++skipped_;
}

std::optional<kdcom_frame> kdcom_decoder::next() {
  auto at = [this](size_t i) { return buffer_[i]; };
  auto u16_at = [&](size_t i) { return static_cast<uint16_t>(at(i) | at(i + 1) << 8); };
  auto u32_at = [&](size_t i) {
    return static_cast<uint32_t>(at(i)) | static_cast<uint32_t>(at(i + 1)) << 8 |
           static_cast<uint32_t>(at(i + 2)) << 16 | static_cast<uint32_t>(at(i + 3)) << 24;
  };
  while (!buffer_.empty()) {
    const uint8_t first = buffer_.front();
    if (first != kDataLeaderByte && first != kControlLeaderByte) {
      buffer_.pop_front();
      if (first == kBreakInByte) return kdcom_frame{kdcom_frame::kind::break_in, 0, 0, {}};
      ++skipped_;
      continue;
    }
    // A leader is four equal bytes; anything shorter is noise.
    size_t run = 1;
    while (run < 4 && run < buffer_.size() && buffer_[run] == first) ++run;
    if (run < 4) {
      if (run == buffer_.size()) return std::nullopt;  // could still become a leader
      buffer_.pop_front();
      ++skipped_;
      continue;
    }
    if (buffer_.size() < kHeaderSize) return std::nullopt;
    const uint16_t type = u16_at(4);
    const uint16_t count = u16_at(6);
    const uint32_t id = u32_at(8);
    const uint32_t sum = u32_at(12);
    if (first == kControlLeaderByte) {
      if (!is_control_type(type) || count != 0) {
        buffer_.pop_front();
        ++skipped_;
        continue;
      }
      buffer_.erase(buffer_.begin(), buffer_.begin() + kHeaderSize);
      return kdcom_frame{kdcom_frame::kind::control, type, id, {}};
    }
    if (!is_data_type(type) || count > kMaxPayload) {
      buffer_.pop_front();
      ++skipped_;
      continue;
    }
    const size_t total = kHeaderSize + count + 1;
    if (buffer_.size() < total) return std::nullopt;
    std::vector<uint8_t> payload(buffer_.begin() + kHeaderSize, buffer_.begin() + kHeaderSize + count);
    const bool good = buffer_[total - 1] == kTrailingByte && kdcom_checksum(payload) == sum;
    if (!good) {
      // Rescan from the next byte: a corrupted length may have swallowed the start of a
      // retransmission that follows.
      buffer_.pop_front();
      ++skipped_;
      return kdcom_frame{kdcom_frame::kind::bad_data, type, id, {}};
    }
    buffer_.erase(buffer_.begin(), buffer_.begin() + total);
    return kdcom_frame{kdcom_frame::kind::data, type, id, std::move(payload)};
  }
  return std::nullopt;
}

}  // namespace toolhost::kd
