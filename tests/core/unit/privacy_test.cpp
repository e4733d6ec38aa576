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

TEST_CASE("the home folder is found percent-encoded and with JSON-escaped slashes too", "[privacy]") {
  CHECK(hide_home_in("file://%2Fhome%2Fal%2Fa.out", "/home/al") == "file://~%2Fa.out");
  CHECK(hide_home_in("%2fhome%2FAl", "/home/Al") == "~");
  CHECK(hide_home_in("%2F%68%6F%6D%65%2F%61%6C/x", "/home/al") == "~/x");
  CHECK(hide_home_in("%2Fhome%2Falice", "/home/al") == "%2Fhome%2Falice");
  CHECK(hide_home_in("%2Fhome%2Fal%69", "/home/al") == "%2Fhome%2Fal%69");  // "/home/ali"
  CHECK(hide_home_in(R"({"p":"\/home\/al\/x"})", "/home/al") == R"({"p":"~\/x"})");
  CHECK(hide_home_in("%2", "/home/al") == "%2");
  CHECK(hide_home_in("/home/al%", "/home/al") == "~%");
}

TEST_CASE("a whole message is filtered, keys included, but not the client's id or progress token", "[privacy]") {
  using toolhost::policy::hide_home_in_message;
  CHECK(hide_home_in_message(R"({"jsonrpc":"2.0","id":"/home/al","result":{"/home/al/k":["/home/al/v",1.5e300,7]}})",
                             "/home/al") == R"({"jsonrpc":"2.0","id":"/home/al","result":{"~/k":["~/v",1.5e300,7]}})");
  CHECK(
      hide_home_in_message(
          R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"/home/al","message":"/home/al/x"}})",
          "/home/al") ==
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"/home/al","message":"~/x"}})");
  // Numbers are copied as written, even past what a double holds.
  CHECK(hide_home_in_message(R"({"params":{"progressToken":1180591620717411303424,"message":"/home/al"}})",
                             "/home/al") == R"({"params":{"progressToken":1180591620717411303424,"message":"~"}})");
  CHECK(hide_home_in_message(R"([{"id":1,"result":"/home/al"},{"id":"/home/al","error":{}}])", "/home/al") ==
        R"([{"id":1,"result":"~"},{"id":"/home/al","error":{}}])");
  const std::string untouched = R"({"id":1,"result":{"text":"nothing"}})";
  CHECK(hide_home_in_message(untouched, "/home/al") == untouched);
}
