// The KDCOM link against a scripted target on the other end of a Unix socket: packet ids, the
// SYNC bit, ACK / RESEND / RESET, duplicates and retries, byte for byte. The peer builds and
// parses frames by hand so that the codec under test is not its own oracle.
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include <toolhost/kd/byte_stream.h>
#include <toolhost/kd/kdcom_link.h>

#include "unix_listener.h"

using namespace std::chrono_literals;

namespace {

// The target's end: a connected socket and hand-made frames.
class peer {
 public:
  ~peer() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::unique_ptr<toolhost::kd::kdcom_link> connect(int retries = 5) {
    auto stream = toolhost::kd::byte_stream::open("unix:" + listener_.path(), 1000ms);
    REQUIRE(stream.ok());
    fd_ = ::accept(listener_.fd(), nullptr, nullptr);
    REQUIRE(fd_ >= 0);
    toolhost::kd::kdcom_options o;
    o.ack_timeout = 100ms;
    o.retries = retries;
    return std::make_unique<toolhost::kd::kdcom_link>(std::move(*stream), o);
  }

  static void le(std::vector<uint8_t>& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void send_data(uint16_t type, uint32_t id, const std::vector<uint8_t>& payload, bool corrupt = false) {
    std::vector<uint8_t> b;
    le(b, 0x30303030, 4);
    le(b, type, 2);
    le(b, payload.size(), 2);
    le(b, id, 4);
    uint32_t sum = 0;
    for (uint8_t x : payload) sum += x;
    le(b, corrupt ? sum + 1 : sum, 4);
    b.insert(b.end(), payload.begin(), payload.end());
    b.push_back(0xAA);
    REQUIRE(::write(fd_, b.data(), b.size()) == static_cast<ssize_t>(b.size()));
  }
  void send_control(uint16_t type, uint32_t id) {
    std::vector<uint8_t> b;
    le(b, 0x69696969, 4);
    le(b, type, 2);
    le(b, 0, 2);
    le(b, id, 4);
    le(b, 0, 4);
    REQUIRE(::write(fd_, b.data(), b.size()) == static_cast<ssize_t>(b.size()));
  }

  struct frame {
    uint32_t leader = 0;
    uint16_t type = 0;
    uint32_t id = 0;
    std::vector<uint8_t> payload;
    bool trailer_ok = false;
  };
  // The next frame the link wrote, or leader 0 after `ms` of silence.
  frame next(int ms = 1000) {
    frame f;
    auto read_exact = [&](uint8_t* into, size_t n) {
      size_t got = 0;
      while (got < n) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, ms) <= 0) return false;
        const ssize_t r = ::read(fd_, into + got, n - got);
        if (r <= 0) return false;
        got += static_cast<size_t>(r);
      }
      return true;
    };
    uint8_t h[16];
    if (!read_exact(h, 16)) return f;
    auto u16 = [&](int at) { return static_cast<uint16_t>(h[at] | h[at + 1] << 8); };
    auto u32 = [&](int at) {
      return static_cast<uint32_t>(h[at] | h[at + 1] << 8 | h[at + 2] << 16 | static_cast<uint32_t>(h[at + 3]) << 24);
    };
    f.leader = u32(0);
    f.type = u16(4);
    f.id = u32(8);
    if (f.leader == 0x30303030) {
      f.payload.resize(u16(6));
      uint8_t trailer = 0;
      REQUIRE(read_exact(f.payload.data(), f.payload.size()));
      REQUIRE(read_exact(&trailer, 1));
      uint32_t sum = 0;
      for (uint8_t x : f.payload) sum += x;
      f.trailer_ok = trailer == 0xAA && sum == u32(12);
    }
    return f;
  }

 private:
  kdtest::unix_listener listener_;
  int fd_ = -1;
};

const std::vector<uint8_t> kPayload = {0x30, 0x31, 0, 0, 7, 7};

}  // namespace

TEST_CASE("kdcom link: our ids start at 0x80800000 and toggle bit 0 on each acknowledgement", "[kdcom]") {
  peer target;
  auto link = target.connect();
  auto sent = std::async(std::launch::async, [&] { return link->send(2, kPayload); });
  auto f = target.next();
  CHECK(f.leader == 0x30303030u);
  CHECK(f.type == 2);
  CHECK(f.id == 0x80800000u);
  CHECK(f.trailer_ok);
  CHECK(f.payload == kPayload);
  target.send_control(4, 0x80800000);
  REQUIRE(sent.get().ok());

  sent = std::async(std::launch::async, [&] { return link->send(2, kPayload); });
  CHECK(target.next().id == 0x80800001u);
  target.send_control(4, 0x80800001);
  REQUIRE(sent.get().ok());
  sent = std::async(std::launch::async, [&] { return link->send(2, kPayload); });
  CHECK(target.next().id == 0x80800000u);
  target.send_control(4, 0x80800000);
  REQUIRE(sent.get().ok());
}

TEST_CASE("kdcom link: inbound ids, the SYNC bit, duplicates and RESEND", "[kdcom]") {
  peer target;
  auto link = target.connect();
  REQUIRE(link->reset().ok());
  auto reset = target.next();
  CHECK(reset.leader == 0x69696969u);
  CHECK(reset.type == 6);

  // After our RESET the target's SYNC-marked packet is expected, not a reboot; the ACK echoes
  // its id without the SYNC bit.
  target.send_data(7, 0x80800800, kPayload);
  auto in = link->receive(1000ms);
  REQUIRE(in.ok());
  CHECK(in->pkt.type == 7);
  CHECK(in->pkt.payload == kPayload);
  CHECK_FALSE(in->target_restarted);
  auto ack = target.next();
  CHECK(ack.leader == 0x69696969u);
  CHECK(ack.type == 4);
  CHECK(ack.id == 0x80800000u);

  // The same packet again (our ACK was "lost"): acknowledged and dropped.
  target.send_data(7, 0x80800800, kPayload);
  CHECK(absl::IsDeadlineExceeded(link->receive(200ms).status()));
  CHECK(target.next().type == 4);
  CHECK(link->stats().duplicates == 1);

  // A bad checksum is answered with RESEND and not delivered.
  target.send_data(3, 0x80800001, kPayload, /*corrupt=*/true);
  CHECK(absl::IsDeadlineExceeded(link->receive(200ms).status()));
  CHECK(target.next().type == 5);
  CHECK(link->stats().bad_packets == 1);

  // The next id in sequence is delivered.
  target.send_data(3, 0x80800001, kPayload);
  in = link->receive(1000ms);
  REQUIRE(in.ok());
  CHECK(in->pkt.type == 3);
  CHECK(target.next().id == 0x80800001u);
  // An out-of-sequence, non-SYNC id is stale: acknowledged and dropped.
  target.send_data(3, 0x80800001, kPayload);
  CHECK(absl::IsDeadlineExceeded(link->receive(200ms).status()));

  // A SYNC-marked packet that no RESET of ours explains: the target restarted (rebooted).
  target.next();
  target.send_data(7, 0x80800800, kPayload);
  in = link->receive(1000ms);
  REQUIRE(in.ok());
  CHECK(in->target_restarted);
}

TEST_CASE("kdcom link: unacknowledged packets are retransmitted, then the send fails", "[kdcom]") {
  peer target;
  auto link = target.connect(/*retries=*/3);
  auto sent = std::async(std::launch::async, [&] { return link->send(2, kPayload); });
  int copies = 0;
  while (target.next(500).leader == 0x30303030u) ++copies;
  const auto s = sent.get();
  CHECK(copies == 4);
  CHECK(absl::IsDeadlineExceeded(s));
  CHECK(std::string(s.message()).find("4 tries") != std::string::npos);
}

TEST_CASE("kdcom link: RESEND retransmits at once; a RESET from the target restarts our ids", "[kdcom]") {
  peer target;
  auto link = target.connect();
  auto sent = std::async(std::launch::async, [&] { return link->send(2, kPayload); });
  CHECK(target.next().id == 0x80800000u);
  target.send_control(5, 0);
  auto again = target.next(50);  // well before the 100 ms retransmit timer
  CHECK(again.id == 0x80800000u);
  target.send_control(4, 0x80800000);
  REQUIRE(sent.get().ok());

  sent = std::async(std::launch::async, [&] { return link->send(2, kPayload); });
  CHECK(target.next().id == 0x80800001u);
  target.send_control(6, 0);
  auto answer = target.next();
  CHECK(answer.leader == 0x69696969u);
  CHECK(answer.type == 6);
  auto resent = target.next();
  CHECK(resent.id == 0x80800000u);  // ids start over
  target.send_control(4, 0x80800000);
  REQUIRE(sent.get().ok());
}

TEST_CASE("kdcom link: data arriving while we wait for an ACK is acknowledged and queued", "[kdcom]") {
  peer target;
  auto link = target.connect();
  auto sent = std::async(std::launch::async, [&] { return link->send(2, kPayload); });
  CHECK(target.next().id == 0x80800000u);
  target.send_data(3, 0x80800000, {1, 2, 3});
  CHECK(target.next().type == 4);
  target.send_control(4, 0x80800000);
  REQUIRE(sent.get().ok());
  auto queued = link->receive(0ms);
  REQUIRE(queued.ok());
  CHECK(queued->pkt.type == 3);
  CHECK(queued->pkt.payload == std::vector<uint8_t>({1, 2, 3}));
}
