// The simulator's own KDNET code against traffic captured from a real Windows target and WinDbg
// (key 1.1.1.1, libKDNET's test_pkt.h): it must produce the target's datagrams byte for byte and
// open the debugger's. This checks the simulator itself, with no backend code involved.
#include <catch2/catch.hpp>

#include <openssl/sha.h>

#include "kdnet_sim.hpp"
#include "libkdnet_captures.hpp"
#include "test_bytes.hpp"

namespace cap = libkdnet_captures;

TEST_CASE("the simulator seals the captured target datagrams byte for byte") {
  const std::string key = "1.1.1.1";
  const std::vector<uint8_t> poke = from_hex(cap::kPoke);
  const std::vector<uint8_t> poke_body = kdnet_sim::open_with(key, {}, poke);
  REQUIRE(poke_body.size() == 344);
  CHECK(kdnet_sim::seal_as_target(key, {}, 1, 2694, poke_body) == poke);

  const std::vector<uint8_t> reply_body = kdnet_sim::open_with(key, {}, from_hex(cap::kPokeResponse));
  REQUIRE(reply_body.size() == 322);
  std::vector<uint8_t> material{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
                                1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  material.insert(material.end(), reply_body.begin(), reply_body.end());
  std::vector<uint8_t> data_key(32);
  SHA256(material.data(), material.size(), data_key.data());

  const std::vector<uint8_t> conncheck = from_hex(cap::kConnCheck);
  const std::vector<uint8_t> conncheck_body = kdnet_sim::open_with(key, data_key, conncheck);
  REQUIRE(conncheck_body.size() == 12);
  CHECK(kdnet_sim::seal_as_target(key, data_key, 0, 2, conncheck_body) == conncheck);

  const std::vector<uint8_t> request = kdnet_sim::open_with(key, data_key, from_hex(cap::kGetVersionRequest));
  REQUIRE(request.size() == 72);
  CHECK(request[16] == 0x46);                                                       // DbgKdGetVersionApi
  CHECK(kdnet_sim::open_with(key, {}, from_hex(cap::kGetVersionRequest)).empty());  // no data key: refused
}
