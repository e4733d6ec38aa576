#include <catch2/catch.hpp>

#include "host/utf8.hpp"

using toolhost::utf8::first_invalid;
using toolhost::utf8::repaired;

TEST_CASE("well-formed UTF-8 passes, the first bad byte is found", "[utf8]") {
  CHECK(first_invalid("plain ascii") == std::string::npos);
  CHECK(first_invalid("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == std::string::npos);
  CHECK(first_invalid("ab\xFF") == 2);
  CHECK(first_invalid("\xC0\xAF") == 0);          // overlong '/'
  CHECK(first_invalid("x\xED\xA0\x80") == 1);     // a surrogate
  CHECK(first_invalid("\xF4\x90\x80\x80") == 0);  // past U+10FFFF
  CHECK(first_invalid("\xE2\x82") == 0);          // cut short
}

TEST_CASE("a bad byte is found at every place in and after long ASCII runs", "[utf8]") {
  // ASCII is skipped 32 and 8 bytes at a time: a bad byte must be found wherever it falls in a block.
  for (size_t at = 0; at < 100; ++at) {
    std::string text(112, 'a');
    text[at] = '\xFF';
    CHECK(first_invalid(text) == at);
    text[at] = '\xC3';  // a lead byte whose continuation is cut off by the next ASCII byte
    CHECK(first_invalid(text) == at);
  }
  std::string long_valid(37, 'x');
  long_valid += "\xC3\xA9";
  long_valid += std::string(20, 'y');
  CHECK(first_invalid(long_valid) == std::string::npos);
  CHECK(first_invalid(std::string(64, 'z') + "\xE2\x82") == 64);  // cut short at the very end
}

TEST_CASE("each maximal ill-formed subsequence becomes one U+FFFD", "[utf8]") {
  const std::string r = "\xEF\xBF\xBD";
  CHECK(repaired("ok") == "ok");
  CHECK(repaired("a\xFF"
                 "b") == "a" + r + "b");
  CHECK(repaired("\xE2\x82 x") == r + " x");     // a truncated euro sign: one
  CHECK(repaired("\xED\xA0\x80") == r + r + r);  // a surrogate: three, as WHATWG decodes it
  CHECK(repaired("\xC0\xAF") == r + r);
  CHECK(repaired("\xF0\x9F") == r);
  CHECK(repaired("\xF0\x9F\x98\x80\xFF") == "\xF0\x9F\x98\x80" + r);
}
