#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <toolhost/mcp_client/json_rpc.hpp>

using namespace toolhost::mcp_client;

TEST_CASE("line_splitter joins lines split across reads and skips empty ones") {
  line_splitter splitter;
  std::vector<std::string> lines;
  auto collect = [&](std::string_view l) { lines.emplace_back(l); };
  REQUIRE(splitter.feed("{\"a\":1}\n{\"b\"", collect).ok());
  REQUIRE(lines == std::vector<std::string>{"{\"a\":1}"});
  REQUIRE(splitter.feed(":2}\r\n\n{\"c\":3}", collect).ok());
  REQUIRE(lines == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"});
  REQUIRE(splitter.buffered() == 7);
  REQUIRE(splitter.feed("\n", collect).ok());
  REQUIRE(lines.back() == "{\"c\":3}");
}

TEST_CASE("line_splitter refuses a line longer than its limit") {
  line_splitter splitter(8);
  auto ignore = [](std::string_view) {};
  REQUIRE_FALSE(splitter.feed("0123456789", ignore).ok());
  REQUIRE(splitter.feed("ok\n", ignore).ok());  // and recovers afterwards
  REQUIRE_FALSE(splitter.feed("0123456789\n", ignore).ok());
}

TEST_CASE("parse_message classifies the four kinds of message") {
  auto req = parse_message(R"({"jsonrpc":"2.0","id":"x1","method":"elicitation/create","params":{"message":"hi"}})");
  REQUIRE(req.ok());
  CHECK(req->type == message::kind::request);
  CHECK(req->id == "\"x1\"");
  CHECK(req->params == R"({"message":"hi"})");

  auto note = parse_message(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
  REQUIRE(note.ok());
  CHECK(note->type == message::kind::notification);
  CHECK(note->params == "{}");

  auto res = parse_message(R"({"jsonrpc":"2.0","id":7,"result":{"tools":[]}})");
  REQUIRE(res.ok());
  CHECK(res->type == message::kind::response);
  int64_t id = 0;
  CHECK(integer_id(*res, &id));
  CHECK(id == 7);
  CHECK(res->result == R"({"tools":[]})");

  auto err = parse_message(R"({"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Unknown tool: x"}})");
  REQUIRE(err.ok());
  CHECK(err->type == message::kind::error_response);
  CHECK(err->error_code == -32602);
  CHECK(err->error_message == "Unknown tool: x");
}

TEST_CASE("parse_message names what is wrong with a bad message") {
  CHECK(std::string(parse_message("[{}]").status().message()).find("batch") != std::string::npos);
  CHECK(std::string(parse_message("{nope").status().message()).find("invalid JSON") != std::string::npos);
  CHECK_FALSE(parse_message(R"({"jsonrpc":"2.0","id":null,"result":{}})").ok());
  CHECK_FALSE(parse_message(R"({"jsonrpc":"2.0","id":1})").ok());
  CHECK_FALSE(parse_message("42").ok());
}

TEST_CASE("outgoing messages are compact single lines") {
  CHECK(make_request(3, "tools/list", "{}") == R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}})");
  CHECK(make_notification("notifications/initialized", "") ==
        R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  CHECK(make_result("\"a\"", "{}") == R"({"jsonrpc":"2.0","id":"a","result":{}})");
  CHECK(make_error("4", -32601, "no \"such\"\nmethod") ==
        R"({"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no \"such\"\nmethod"}})");
}
