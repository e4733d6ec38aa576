#include <catch2/catch.hpp>

#include <toolhost/sdk/json.hpp>

#include "host/policy/privacy.hpp"

using toolhost::policy::hide_home_in;

TEST_CASE("the home folder becomes ~ only as a whole path prefix", "[privacy]") {
  CHECK(hide_home_in("/home/al/bin/x", "/home/al") == "~/bin/x");
  CHECK(hide_home_in("/home/al", "/home/al") == "~");
  CHECK(hide_home_in("see /home/al and /home/al/y.", "/home/al") == "see ~ and ~/y.");
  CHECK(hide_home_in("/home/alice/x", "/home/al") == "/home/alice/x");
  CHECK(hide_home_in("nothing here", "/home/al") == "nothing here");
  CHECK(hide_home_in("/x", "/") == "/x");
}

TEST_CASE("every string of a JSON answer is filtered", "[privacy]") {
  auto doc = toolhost::sdk::parse_json(
      R"({"content":[{"type":"text","text":"opened /home/al/a.out"}],"structuredContent":{"file":"/home/al/a.out","n":1}})");
  REQUIRE(doc);
  toolhost::policy::hide_home(*doc, doc->GetAllocator(), "/home/al");
  CHECK(toolhost::sdk::to_json(*doc) ==
        R"({"content":[{"type":"text","text":"opened ~/a.out"}],"structuredContent":{"file":"~/a.out","n":1}})");
}
