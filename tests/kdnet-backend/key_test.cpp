#include <catch2/catch.hpp>

#include "toolhost/kdnet/key.hpp"

using namespace toolhost::kdnet;

TEST_CASE("the published key vector parses to its four numbers") {
  auto key = parse_key("1.z.10.3w5e11264sgsf");
  REQUIRE(key.ok());
  CHECK(key->words[0] == 1);
  CHECK(key->words[1] == 35);
  CHECK(key->words[2] == 36);
  CHECK(key->words[3] == UINT64_MAX);
  // Little-endian words, in order, make the 32-byte control key.
  CHECK(key->bytes[0] == 1);
  CHECK(key->bytes[1] == 0);
  CHECK(key->bytes[8] == 35);
  CHECK(key->bytes[16] == 36);
  CHECK(key->bytes[17] == 0);
  for (size_t i = 24; i < 32; ++i) CHECK(key->bytes[i] == 0xff);
}

TEST_CASE("key digits are case-insensitive") {
  auto lower = parse_key("abc.def.ghi.jkl");
  auto upper = parse_key("ABC.DEF.GHI.JKL");
  REQUIRE(lower.ok());
  REQUIRE(upper.ok());
  CHECK(lower->words == upper->words);
  CHECK(lower->words[0] == 10 * 36 * 36 + 11 * 36 + 12);
}

TEST_CASE("the HMAC key inverts every control-key byte") {
  auto key = parse_key("1.z.10.3w5e11264sgsf");
  REQUIRE(key.ok());
  const key256 h = hmac_key(key->bytes);
  CHECK(h[0] == 0xfe);
  CHECK(h[8] == static_cast<uint8_t>(~35));
  CHECK(h[31] == 0x00);
}

TEST_CASE("malformed keys are refused with the expected form shown") {
  struct bad {
    const char* text;
    const char* why;
  };
  const bad cases[] = {
      {"", "part 1 is empty"},
      {"1.2.3", "it has 3 parts instead of 4"},
      {"1.2.3.4.5", "more than 4 parts"},
      {"1..3.4", "part 2 is empty"},
      {"1.2.3.", "part 4 is empty"},
      {"1.2.3-4.5", "contains '-'"},
      {"1.2.3.4 ", "contains ' '"},
      {"1.2.3.3w5e11264sgsg", "does not fit in 64 bits"},
      {"1.2.3.zzzzzzzzzzzzzz", "more than 13 characters"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto key = parse_key(c.text);
    REQUIRE_FALSE(key.ok());
    const std::string message(key.status().message());
    CHECK_THAT(message, Catch::Contains(c.why));
    CHECK_THAT(message, Catch::Contains("expected four base-36 numbers separated by dots"));
    CHECK_THAT(message, Catch::Contains("1.2.3.4"));
  }
}
