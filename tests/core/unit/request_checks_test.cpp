#include <catch2/catch.hpp>

#include <toolhost/sdk/json.hpp>

#include "host/mcp/request_checks.hpp"

using toolhost::mcp::nul_byte_in;
using toolhost::mcp::progress_token_text;

TEST_CASE("a NUL byte anywhere in the arguments is found with its path", "[request]") {
  auto doc = toolhost::sdk::parse_json(R"({"a":"x","files":[{"name":"ok"},{"name":"b\u0000c"}]})");
  REQUIRE(doc);
  CHECK(nul_byte_in(*doc) == "files[1].name");
  doc = toolhost::sdk::parse_json(R"({"k\u0000":1})");
  CHECK(nul_byte_in(*doc) == "k\\u0000");
  doc = toolhost::sdk::parse_json(R"({"a":"\u0001","b":[1,"two"]})");
  CHECK_FALSE(nul_byte_in(*doc).has_value());
}

TEST_CASE("progress tokens: strings and integers as written, floats refused", "[request]") {
  auto token_of = [](const std::string& message, int index = -1) {
    auto doc = toolhost::sdk::parse_json(message);
    REQUIRE(doc);
    const rapidjson::Value* m = index < 0 ? &*doc : &(*doc)[index];
    return progress_token_text((*m)["params"]["_meta"]["progressToken"], message, index);
  };
  CHECK(*token_of(R"({"params":{"_meta":{"progressToken":"t"}}})") == "\"t\"");
  CHECK(*token_of(R"({"params":{"_meta":{"progressToken":-3}}})") == "-3");
  CHECK(*token_of(R"({"params":{"_meta":{"progressToken":18446744073709551615}}})") == "18446744073709551615");
  CHECK(*token_of(R"({"params":{"_meta":{"progressToken":1180591620717411303424}}})") == "1180591620717411303424");
  CHECK(
      *token_of(
          R"([{"params":{"_meta":{"progressToken":1}}},{"params":{"_meta":{"progressToken":99999999999999999999999}}}])",
          1) == "99999999999999999999999");
  CHECK_FALSE(token_of(R"({"params":{"_meta":{"progressToken":1.5}}})").ok());
  CHECK_FALSE(token_of(R"({"params":{"_meta":{"progressToken":1e30}}})").ok());
  CHECK_FALSE(token_of(R"({"params":{"_meta":{"progressToken":true}}})").ok());
  CHECK_FALSE(token_of(R"({"params":{"_meta":{"progressToken":null}}})").ok());
}

TEST_CASE("a plugin's _meta is the client's, without 2026-07-28's request context", "[request]") {
  auto meta_of = [](const char* json) {
    auto doc = toolhost::sdk::parse_json(json);
    REQUIRE(doc);
    return toolhost::mcp::meta_for_plugins(*doc);
  };
  // 2025-11-25: as the client sent it.
  CHECK(meta_of(R"({"progressToken":7,"com.example/trace":"abc"})") ==
        R"({"progressToken":7,"com.example/trace":"abc"})");
  // 2026-07-28: the request context goes (the host hands it over in toolhost_call's own fields).
  CHECK(meta_of(R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                R"("io.modelcontextprotocol/clientCapabilities":{"sampling":{}},)"
                R"("io.modelcontextprotocol/logLevel":"debug"})") == "{}");
  CHECK(meta_of(R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p",)"
                R"("io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/other":1})") ==
        R"({"progressToken":"p","io.modelcontextprotocol/other":1})");
  CHECK(meta_of("{}") == "{}");
}
