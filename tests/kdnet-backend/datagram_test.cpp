#include <catch2/catch.hpp>

#include <algorithm>

#include "libkdnet_captures.hpp"
#include "test_bytes.hpp"
#include "toolhost/kdnet/datagram.hpp"
#include "toolhost/kdnet/handshake.hpp"
#include "toolhost/kdnet/key.hpp"

using namespace toolhost::kdnet;
namespace cap = libkdnet_captures;

namespace {

key_set keys_for(const char* text) {
  auto key = parse_key(text);
  REQUIRE(key.ok());
  return key_set::from_control(key->bytes);
}

// The keys both sides hold after the captured handshake.
key_set captured_session_keys() {
  key_set keys = keys_for("1.1.1.1");
  auto reply = decode_datagram(keys, from_hex(cap::kPokeResponse));
  REQUIRE(reply.ok());
  keys.data = data_key(keys.control, reply->payload);
  return keys;
}

}  // namespace

TEST_CASE("a captured poke decodes with key 1.1.1.1") {
  auto d = decode_datagram(keys_for("1.1.1.1"), from_hex(cap::kPoke));
  REQUIRE(d.ok());
  CHECK(d->version == 2);
  CHECK(d->chan == channel::control);
  CHECK_FALSE(d->from_host);
  CHECK(d->sequence == 2694);
  REQUIRE(d->payload.size() == kPokeSize);
  auto p = parse_poke(d->payload);
  REQUIRE(p.ok());
  CHECK(p->host_port == 50000);
}

TEST_CASE("the captured reply echoes the client key and our reply body has the same shape") {
  const key_set keys = keys_for("1.1.1.1");
  auto poke_d = decode_datagram(keys, from_hex(cap::kPoke));
  auto reply_d = decode_datagram(keys, from_hex(cap::kPokeResponse));
  REQUIRE(poke_d.ok());
  REQUIRE(reply_d.ok());
  CHECK(reply_d->from_host);
  CHECK(reply_d->sequence == poke_d->sequence);
  auto p = parse_poke(poke_d->payload);
  REQUIRE(p.ok());
  // Our body with the same host random must be byte for byte what WinDbg sent.
  std::array<uint8_t, 32> host_random{};
  std::copy_n(reply_d->payload.begin() + 34, 32, host_random.begin());
  CHECK(response_body(*p, host_random) == reply_d->payload);
}

TEST_CASE("the data key from the captured handshake decrypts the captured data channel") {
  const key_set keys = captured_session_keys();
  auto conn = decode_datagram(keys, from_hex(cap::kConnCheck));
  REQUIRE(conn.ok());
  CHECK(conn->chan == channel::data);
  CHECK_FALSE(conn->from_host);
  CHECK(conn->payload.size() == 12);

  auto req = decode_datagram(keys, from_hex(cap::kGetVersionRequest));
  REQUIRE(req.ok());
  CHECK(req->from_host);
  CHECK(req->sequence == 5);
  // A KD data packet (leader 0x30303030), STATE_MANIPULATE, 56 bytes, id 0x80000000,
  // carrying DbgKdGetVersionApi (0x3146); no 0xAA trailer over KDNET.
  REQUIRE(req->payload.size() == 16 + 56);
  const std::vector<uint8_t> head(req->payload.begin(), req->payload.begin() + 12);
  CHECK(head == from_hex("303030300200380000000080"));
  CHECK(req->payload[16] == 0x46);
  CHECK(req->payload[17] == 0x31);

  auto brk = decode_datagram(keys, from_hex(cap::kBreakin));
  REQUIRE(brk.ok());
  CHECK(brk->payload == std::vector<uint8_t>{0x62});
}

TEST_CASE("encoding reproduces captured WinDbg datagrams exactly") {
  const key_set keys = captured_session_keys();
  for (const char* hex : {cap::kPokeResponse, cap::kGetVersionRequest, cap::kBreakin, cap::kReset}) {
    const std::vector<uint8_t> wire = from_hex(hex);
    auto d = decode_datagram(keys, wire);
    REQUIRE(d.ok());
    auto again = encode_datagram(keys, *d);
    REQUIRE(again.ok());
    CHECK(*again == wire);
  }
}

TEST_CASE("round trip for every payload length around the block boundaries") {
  key_set keys = keys_for("1.z.10.3w5e11264sgsf");
  keys.data = key256{};
  keys.data->fill(0x5a);
  for (size_t n = 0; n <= 70; ++n) {
    datagram d{2, n % 2 ? channel::data : channel::control, 1000 + n, n % 3 == 0, std::vector<uint8_t>(n)};
    for (size_t i = 0; i < n; ++i) d.payload[i] = static_cast<uint8_t>(i * 7 + 1);
    auto wire = encode_datagram(keys, d);
    REQUIRE(wire.ok());
    CHECK((wire->size() - kHeaderSize - kTagSize) % 16 == 0);
    auto back = decode_datagram(keys, *wire);
    REQUIRE(back.ok());
    CHECK(back->payload == d.payload);
    CHECK(back->sequence == d.sequence);
    CHECK(back->from_host == d.from_host);
    CHECK(back->chan == d.chan);
  }
}

TEST_CASE("every single-bit flip of a datagram is rejected and never decoded") {
  const key_set keys = captured_session_keys();
  const std::vector<uint8_t> wire = from_hex(cap::kGetVersionRequest);
  size_t unauthenticated = 0;
  size_t malformed = 0;
  for (size_t bit = 0; bit < wire.size() * 8; ++bit) {
    std::vector<uint8_t> flipped = wire;
    flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    auto d = decode_datagram(keys, flipped);
    INFO("bit " << bit);
    REQUIRE_FALSE(d.ok());
    if (bit / 8 >= kHeaderSize) {
      // Ciphertext and tag: only the authentication check can catch these.
      CHECK(absl::IsUnauthenticated(d.status()));
    }
    (absl::IsUnauthenticated(d.status()) ? unauthenticated : malformed) += 1;
  }
  CHECK(unauthenticated + malformed == wire.size() * 8);
  CHECK(unauthenticated >= (wire.size() - kHeaderSize) * 8);
}

TEST_CASE("data-channel traffic before the handshake and foreign bytes are refused by name") {
  const key_set keys = keys_for("1.1.1.1");
  auto early = decode_datagram(keys, from_hex(cap::kGetVersionRequest));
  REQUIRE_FALSE(early.ok());
  CHECK(absl::IsFailedPrecondition(early.status()));

  auto wrong_key = decode_datagram(keys_for("1.1.1.2"), from_hex(cap::kPoke));
  REQUIRE_FALSE(wrong_key.ok());
  CHECK(absl::IsUnauthenticated(wrong_key.status()));

  auto short_one = decode_datagram(keys, std::vector<uint8_t>{'M', 'D', 'B', 'G', 2, 1});
  REQUIRE_FALSE(short_one.ok());
  CHECK_THAT(std::string(short_one.status().message()), Catch::Contains("too short"));

  std::vector<uint8_t> not_kdnet = from_hex(cap::kPoke);
  not_kdnet[0] = 'X';
  auto bad_magic = decode_datagram(keys, not_kdnet);
  REQUIRE_FALSE(bad_magic.ok());
  CHECK_THAT(std::string(bad_magic.status().message()), Catch::Contains("MDBG"));
}
