#include <cstdio>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include <toolhost/sdk/json.hpp>

#include "settings.hpp"

using namespace toolhost::rea_filter;

namespace {

absl::StatusOr<proxy_settings> parse(const char* json, const std::string& server, const std::string& env = "",
                                     const std::string& dir = "/etc/toolhost") {
  auto doc = toolhost::sdk::parse_json(json);
  REQUIRE(doc.has_value());
  return parse_settings(*doc, {server, dir, env});
}

std::string message(const absl::Status& s) { return std::string(s.message()); }

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("rea-filter-test-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("eleven-rea with no settings runs REA with the eleven-rea filter and 30 minute calls") {
  auto s = parse("{}", "eleven-rea");
  REQUIRE(s.ok());
  CHECK(s->upstream.command == std::vector<std::string>{"npx", "-y", "rea-agents", "mcp"});
  CHECK(s->filter.denies("set_comment"));
  CHECK(s->timeout == std::chrono::minutes(30));
  CHECK(s->instructions_wait == std::chrono::seconds(3));
}

TEST_CASE("a custom server needs an upstream and gets no filter unless configured") {
  auto none = parse("{}", "custom");
  REQUIRE_FALSE(none.ok());
  CHECK(message(none.status()).find("[servers.custom.settings.rea-filter]") != std::string::npos);

  auto s = parse(R"({"command":["my-mcp","--stdio"],"env":{"TOKEN":"x"},"cwd":"work","timeout_ms":5000})", "custom");
  REQUIRE(s.ok());
  CHECK(s->upstream.command == std::vector<std::string>{"my-mcp", "--stdio"});
  CHECK(s->upstream.env.at("TOKEN") == "x");
  CHECK(s->upstream.cwd == "/etc/toolhost/work");
  CHECK(s->timeout == std::chrono::milliseconds(5000));
  CHECK(s->filter.denied().empty());
  // Its read-only row is named after the server and its upstream, not after REA's open file.
  CHECK(s->read_label == "Read-only tools of the custom server (`my-mcp --stdio`)");
  CHECK(parse("{}", "eleven-rea")->read_label == "Read the open file");
}

TEST_CASE("deny and use_instead build the filter; mistakes are named") {
  auto s = parse(R"({"command":["x"],"deny":["echo","get-env"],"use_instead":{"echo":"say"}})", "custom");
  REQUIRE(s.ok());
  CHECK(s->filter.refusal("echo")->find("`say`") != std::string::npos);
  CHECK(*s->filter.refusal("get-env") == "get-env is turned off for this server by its configuration.");

  auto custom_message = parse(R"({"use_instead":{"set_comment":"Comments go through Eleven."}})", "eleven-rea");
  REQUIRE(custom_message.ok());
  CHECK(*custom_message->filter.refusal("set_comment") == "Comments go through Eleven.");

  CHECK(message(parse(R"({"command":["x"],"use_instead":{"echo":"say"}})", "custom").status()).find("not in deny") !=
        std::string::npos);
  CHECK(message(parse(R"({"command":"npx my-server"})", "custom").status()).find("array of strings") !=
        std::string::npos);
  CHECK(message(parse(R"({"command":["x"],"timeout_ms":0})", "custom").status()).find("timeout_ms") !=
        std::string::npos);
  CHECK(message(parse(R"({"comand":["x"]})", "custom").status()).find("'comand'") != std::string::npos);
  CHECK(message(parse(R"({"command":["x"],"filter":"strict"})", "custom").status()).find("\"strict\"") !=
        std::string::npos);
  CHECK(message(parse(R"({"command":["x"],"url":"http://h/mcp"})", "custom").status()).find("not both") !=
        std::string::npos);
}

TEST_CASE("the ida server reads the MCP config REA_IDA_MCP_CONFIG names") {
  auto missing = parse("{}", "ida");
  REQUIRE_FALSE(missing.ok());
  CHECK(message(missing.status()).find("REA_IDA_MCP_CONFIG") != std::string::npos);

  auto one = temp_file(
      "one.json", R"({"mcpServers":{"ida-pro-mcp":{"command":"uv","args":["run","ida-pro-mcp"],"env":{"IDA":"1"}}}})");
  auto s = parse("{}", "ida", one.string());
  REQUIRE(s.ok());
  CHECK(s->upstream.command == std::vector<std::string>{"uv", "run", "ida-pro-mcp"});
  CHECK(s->upstream.env.at("IDA") == "1");
  CHECK(s->filter.denied().empty());

  auto two = temp_file("two.json", R"({"mcpServers":{"a":{"command":"a"},"b":{"url":"http://127.0.0.1:8744/mcp"}}})");
  auto ambiguous = parse("{}", "ida", two.string());
  REQUIRE_FALSE(ambiguous.ok());
  CHECK(message(ambiguous.status()).find("a, b") != std::string::npos);
  auto chosen = parse((R"({"ida_config":")" + two.string() + R"(","ida_server":"b"})").c_str(), "ida");
  REQUIRE(chosen.ok());
  CHECK(chosen->upstream.url == "http://127.0.0.1:8744/mcp");

  auto bad = temp_file("bad.json", R"({"servers":{}})");
  CHECK(message(parse("{}", "ida", bad.string()).status()).find("mcpServers") != std::string::npos);
  CHECK(message(parse("{}", "ida", "/nonexistent/ida.json").status()).find("/nonexistent/ida.json") !=
        std::string::npos);
  for (const auto& p : {one, two, bad}) std::filesystem::remove(p);
}
