#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <thread>

#include "toolhost/kdnet/datagram.hpp"
#include "toolhost/kdnet/endpoint.hpp"
#include "toolhost/kdnet/handshake.hpp"
#include "toolhost/kdnet/key.hpp"

using namespace toolhost::kdnet;
using namespace std::chrono_literals;

namespace {

// A scripted stand-in for the target side of one test: a UDP socket that pokes, reads the
// host's answers and sends data, using the codec under test (the full protocol is tested
// against the independent simulator in tests/kdnet-sim).
class scripted_target {
 public:
  scripted_target(const control_key& key, uint16_t host_port) : keys_(key_set::from_control(key.bytes)) {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    host_.sin_family = AF_INET;
    host_.sin_port = htons(host_port);
    host_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    client_key_.fill(0x11);
  }
  ~scripted_target() { close(fd_); }

  void send_raw(const std::vector<uint8_t>& bytes) {
    sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&host_), sizeof(host_));
  }
  void send(channel c, std::vector<uint8_t> payload) { send_raw(encode(c, std::move(payload))); }
  std::vector<uint8_t> encode(channel c, std::vector<uint8_t> payload) {
    auto wire = encode_datagram(keys_, datagram{2, c, sequence_++, false, std::move(payload)});
    REQUIRE(wire.ok());
    return *wire;
  }
  void poke(uint16_t port) {
    std::vector<uint8_t> body(kPokeSize, 0);
    body[0] = 1;
    body[1] = 1;
    std::copy(client_key_.begin(), client_key_.end(), body.begin() + 2);
    body[kPokePortOffset] = static_cast<uint8_t>(port >> 8);
    body[kPokePortOffset + 1] = static_cast<uint8_t>(port);
    send(channel::control, body);
  }
  // The next datagram from the host, decoded; adopts the data key from a handshake reply.
  std::optional<datagram> next(std::chrono::milliseconds wait) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(wait.count())) <= 0) return std::nullopt;
    uint8_t buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    auto d = decode_datagram(keys_, std::span<const uint8_t>(buf, static_cast<size_t>(n)));
    REQUIRE(d.ok());
    if (d->chan == channel::control && d->payload.size() == kResponseSize) {
      keys_.data = data_key(keys_.control, d->payload);
    }
    return *d;
  }

  key_set keys_;

 private:
  int fd_ = -1;
  sockaddr_in host_{};
  std::array<uint8_t, 32> client_key_{};
  uint64_t sequence_ = 100;
};

control_key test_key() {
  auto key = parse_key("1.z.10.3w5e11264sgsf");
  REQUIRE(key.ok());
  return *key;
}

std::unique_ptr<endpoint> listening() {
  auto ep = endpoint::listen("127.0.0.1:0", test_key());
  REQUIRE(ep.ok());
  return std::move(*ep);
}

// Runs a handshake and returns once both sides hold the data key.
void handshake(endpoint& ep, scripted_target& target) {
  target.poke(0);
  REQUIRE(ep.wait_keyed(2s).ok());
  auto reply = target.next(2s);
  REQUIRE(reply);
  REQUIRE(reply->chan == channel::control);
  REQUIRE(reply->payload[1] == 2);
  REQUIRE(target.keys_.data);
}

}  // namespace

TEST_CASE("the endpoint keys on a poke and then carries KD packets both ways") {
  auto ep = listening();
  scripted_target target(test_key(), ep->local_port());
  CHECK_FALSE(ep->keyed());
  handshake(*ep, target);
  CHECK(ep->generation() == 0);

  const std::vector<uint8_t> kd{0x30, 0x30, 0x30, 0x30, 7, 0, 0, 0, 1, 0, 0, 0x80, 0, 0, 0, 0};
  target.send(channel::data, kd);
  auto got = ep->receive(2s);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->what == link_event::kind::packet);
  CHECK((*got)->bytes == kd);

  REQUIRE(ep->send(kd).ok());
  auto out = target.next(2s);
  REQUIRE(out);
  CHECK(out->chan == channel::data);
  CHECK(out->from_host);
  CHECK(out->payload == kd);
}

TEST_CASE("every send including retransmissions gets a fresh increasing sequence") {
  auto ep = listening();
  scripted_target target(test_key(), ep->local_port());
  handshake(*ep, target);
  const std::vector<uint8_t> same(16, 0x69);
  uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    REQUIRE(ep->send(same).ok());
    auto d = target.next(2s);
    REQUIRE(d);
    CHECK(d->payload == same);
    CHECK(d->sequence > last);
    last = d->sequence;
  }
}

TEST_CASE("keepalives are left unanswered and a fresh poke after traffic is a reboot") {
  auto ep = listening();
  scripted_target target(test_key(), ep->local_port());
  handshake(*ep, target);

  target.poke(50000);  // keepalive from a keyed target
  auto none = ep->receive(300ms);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  CHECK_FALSE(target.next(300ms).has_value());
  CHECK(ep->stats().keepalives == 1);

  target.send(channel::data, std::vector<uint8_t>(16, 0x30));
  auto packet = ep->receive(2s);
  REQUIRE(packet.ok());
  REQUIRE(packet->has_value());

  // The target rebooted: it pokes without a data port and must be answered with a new key.
  const key256 old_key = *target.keys_.data;
  target.poke(0);
  auto event = ep->receive(2s);
  REQUIRE(event.ok());
  REQUIRE(event->has_value());
  CHECK((*event)->what == link_event::kind::rebooted);
  CHECK(ep->generation() == 1);
  CHECK(ep->stats().reboots == 1);
  auto reply = target.next(2s);
  REQUIRE(reply);
  CHECK(*target.keys_.data != old_key);

  // Traffic under the new key flows.
  target.send(channel::data, std::vector<uint8_t>(16, 0x31));
  auto after = ep->receive(2s);
  REQUIRE(after.ok());
  REQUIRE(after->has_value());
  CHECK((*after)->bytes == std::vector<uint8_t>(16, 0x31));
}

TEST_CASE("a repeated poke before any traffic (our reply was lost) is answered and is no reboot") {
  auto ep = listening();
  scripted_target target(test_key(), ep->local_port());
  handshake(*ep, target);
  target.poke(0);
  auto nothing = ep->receive(300ms);
  REQUIRE(nothing.ok());
  CHECK_FALSE(nothing->has_value());
  auto reply = target.next(2s);
  REQUIRE(reply);
  CHECK(reply->payload.size() == kResponseSize);
  CHECK(ep->generation() == 0);
  CHECK(ep->stats().handshakes == 2);
}

TEST_CASE("a break-in before the handshake waits for the key") {
  auto ep = listening();
  scripted_target target(test_key(), ep->local_port());
  REQUIRE(ep->send_breakin().ok());
  CHECK_FALSE(target.next(200ms).has_value());
  handshake(*ep, target);
  auto brk = target.next(2s);
  REQUIRE(brk);
  CHECK(brk->chan == channel::data);
  CHECK(brk->payload == std::vector<uint8_t>{0x62});
}

TEST_CASE("every bit-flipped datagram is rejected and counted by the endpoint") {
  auto ep = listening();
  scripted_target target(test_key(), ep->local_port());
  handshake(*ep, target);
  const std::vector<uint8_t> wire = target.encode(channel::data, std::vector<uint8_t>(40, 0x30));
  const auto before = ep->stats();
  auto rejected_so_far = [&] {
    const auto now = ep->stats();
    return (now.rejected_unauthenticated - before.rejected_unauthenticated) +
           (now.rejected_malformed - before.rejected_malformed);
  };
  for (size_t bit = 0; bit < wire.size() * 8; ++bit) {
    std::vector<uint8_t> flipped = wire;
    flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    target.send_raw(flipped);
    // One at a time, so that the socket buffer never overflows and every datagram is judged.
    for (int tries = 0; rejected_so_far() < bit + 1 && tries < 1000; ++tries) {
      if (tries > 0) std::this_thread::sleep_for(1ms);
      auto r = ep->receive(0ms);
      REQUIRE(r.ok());
      if (r->has_value()) FAIL("a flipped datagram was decoded (bit " << bit << ")");
    }
  }
  const auto after = ep->stats();
  const uint64_t rejected = (after.rejected_unauthenticated - before.rejected_unauthenticated) +
                            (after.rejected_malformed - before.rejected_malformed);
  CHECK(rejected == wire.size() * 8);
  CHECK(after.rejected_unauthenticated - before.rejected_unauthenticated >= (wire.size() - kHeaderSize) * 8);

  target.send_raw(wire);  // the intact datagram still goes through
  auto ok = ep->receive(2s);
  REQUIRE(ok.ok());
  CHECK(ok->has_value());
}

TEST_CASE("a bad listen address is refused with the expected form") {
  auto bad = endpoint::listen("localhost:notaport", test_key());
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("HOST:PORT"));
}
