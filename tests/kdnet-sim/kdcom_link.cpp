#include "kdcom_link.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kdnet_sim {
namespace {

// KDCOM framing (windbgkd.h): a 16-byte header, the payload and 0xAA for data packets.
constexpr uint32_t kLeaderData = 0x30303030, kLeaderControl = 0x69696969;
constexpr uint16_t kPtAck = 4, kPtResend = 5, kPtReset = 6;
constexpr uint32_t kInitialId = 0x80800000, kSyncBit = 0x800;
constexpr size_t kMaxPayload = 4000;
constexpr uint8_t kTrailer = 0xAA, kBreakIn = 0x62;

uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

std::vector<uint8_t> frame(uint32_t leader, uint16_t type, uint32_t id, const std::vector<uint8_t>& payload) {
  uint32_t sum = 0;
  for (uint8_t b : payload) sum += b;
  const uint32_t fields[] = {leader, uint32_t(type) | uint32_t(payload.size()) << 16, id,
                             leader == kLeaderData ? sum : 0};
  std::vector<uint8_t> out(16);
  for (int f = 0; f < 4; ++f) {
    for (int i = 0; i < 4; ++i) out[size_t(f * 4 + i)] = uint8_t(fields[f] >> (8 * i));
  }
  if (leader == kLeaderData) {
    out.insert(out.end(), payload.begin(), payload.end());
    out.push_back(kTrailer);
  }
  return out;
}

}  // namespace

kdcom_link::~kdcom_link() {
  if (fd_ >= 0) ::close(fd_);
}

bool kdcom_link::connect(const std::string& spec, std::string* error) {
  const std::string path = spec.rfind("unix:", 0) == 0 ? spec.substr(5) : spec;
  sockaddr_un a{};
  if (path.empty() || path.size() >= sizeof(a.sun_path)) {
    *error = "the KD target's socket path '" + path + "' is empty or too long";
    return false;
  }
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size());
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    *error = "cannot connect to the KD target at " + path + ": " + std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return false;
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  restart_ids();
  return true;
}

void kdcom_link::restart_ids() {
  next_id_ = kInitialId;
  last_taken_.reset();
}

void kdcom_link::write_bytes(const std::vector<uint8_t>& bytes) {
  size_t done = 0;
  while (fd_ >= 0 && done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += size_t(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      ::usleep(200);  // a full socket buffer on a local stream drains at once
    } else {
      ::close(fd_);
      fd_ = -1;
    }
  }
}

void kdcom_link::transmit_front() {
  waiting_ack_ = true;
  sent_at_ = std::chrono::steady_clock::now();
  write_bytes(frame(kLeaderData, out_.front().first, next_id_, out_.front().second));
}

void kdcom_link::send(uint16_t type, std::vector<uint8_t> payload) {
  out_.emplace_back(type, std::move(payload));
  if (!waiting_ack_) transmit_front();
}

void kdcom_link::send_control(uint16_t type) {
  if (type == kPtReset) {
    restart_ids();
    out_.clear();  // what was not acknowledged is gone with the stream it belonged to
    waiting_ack_ = false;
  }
  write_bytes(frame(kLeaderControl, type, 0, {}));
}

void kdcom_link::break_in() { write_bytes({kBreakIn}); }

std::vector<kdcom_link::packet> kdcom_link::pump() {
  std::vector<packet> taken;
  uint8_t buf[8192];
  for (;;) {
    if (fd_ < 0) break;
    const ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n > 0) {
      in_.insert(in_.end(), buf, buf + n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      ::close(fd_);
      fd_ = -1;
    }
    break;
  }
  for (;;) {
    // Resynchronise on a leader, as kdcom does with the bytes between packets.
    size_t at = 0;
    while (at + 4 <= in_.size() && le32(&in_[at]) != kLeaderData && le32(&in_[at]) != kLeaderControl) ++at;
    in_.erase(in_.begin(), in_.begin() + long(at));
    if (in_.size() < 16) break;
    const uint32_t leader = le32(&in_[0]);
    const uint16_t type = le16(&in_[4]), count = le16(&in_[6]);
    const uint32_t id = le32(&in_[8]), sum = le32(&in_[12]);
    if (leader == kLeaderControl) {
      in_.erase(in_.begin(), in_.begin() + 16);
      if (type == kPtAck && waiting_ack_ && (id & ~kSyncBit) == next_id_) {
        out_.pop_front();
        waiting_ack_ = false;
        next_id_ ^= 1;
        if (!out_.empty()) transmit_front();
      } else if (type == kPtResend && waiting_ack_) {
        transmit_front();
      } else if (type == kPtReset) {
        // The target restarted its ids (our RESET answered, or its own); a request it had not
        // acknowledged is sent again in the new stream.
        next_id_ = kInitialId;
        last_taken_.reset();
        if (waiting_ack_) transmit_front();
      }
      continue;
    }
    if (count > kMaxPayload) {
      in_.erase(in_.begin());
      continue;
    }
    if (in_.size() < 16u + count + 1) break;
    std::vector<uint8_t> payload(in_.begin() + 16, in_.begin() + 16 + count);
    const bool trailer_ok = in_[16u + count] == kTrailer;
    uint32_t total = 0;
    for (uint8_t b : payload) total += b;
    if (!trailer_ok || total != sum) {
      in_.erase(in_.begin());
      write_bytes(frame(kLeaderControl, kPtResend, 0, {}));
      continue;
    }
    in_.erase(in_.begin(), in_.begin() + 16 + count + 1);
    write_bytes(frame(kLeaderControl, kPtAck, id & ~kSyncBit, {}));
    const bool sync = (id & kSyncBit) != 0;
    if (sync) next_id_ = kInitialId;                           // a new stream: the target expects our first id again
    if (!sync && last_taken_ && *last_taken_ == id) continue;  // our ACK came late: a retransmit
    last_taken_ = id & ~kSyncBit;
    taken.push_back(packet{type, std::move(payload), sync});
  }
  if (waiting_ack_ && std::chrono::steady_clock::now() - sent_at_ > std::chrono::milliseconds(500)) transmit_front();
  return taken;
}

}  // namespace kdnet_sim
