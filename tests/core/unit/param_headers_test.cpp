#include <absl/strings/ascii.h>
#include <catch2/catch.hpp>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/param_headers.hpp>

#include "host/mcp/input_required.hpp"

namespace ph = toolhost::sdk::param_headers;

namespace {

absl::StatusOr<std::vector<ph::annotation>> annotations(const char* schema) {
  auto doc = toolhost::sdk::parse_json(schema);
  REQUIRE(doc);
  return ph::annotations_of(*doc);
}

std::string mismatch(const char* schema, const char* arguments, const ph::received& headers) {
  auto found = annotations(schema);
  REQUIRE(found.ok());
  auto args = toolhost::sdk::parse_json(arguments);
  REQUIRE(args);
  return ph::mismatch(*found, &*args, headers);
}

constexpr const char* kSchema = R"({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},)"
                                R"("n":{"type":"integer","x-mcp-header":"N"},"deep":{"type":"object","properties":)"
                                R"({"flag":{"type":"boolean","x-mcp-header":"Flag"}}},"query":{"type":"string"}}})";

}  // namespace

TEST_CASE("x-mcp-header annotations: found along properties, refused where the spec forbids them", "[headers]") {
  auto found = annotations(kSchema);
  REQUIRE(found.ok());
  REQUIRE(found->size() == 3);
  CHECK((*found)[2].header == "Flag");
  CHECK((*found)[2].path == std::vector<std::string>{"deep", "flag"});
  CHECK_FALSE(annotations(R"({"properties":{"a":{"type":"number","x-mcp-header":"A"}}})").ok());
  CHECK_FALSE(annotations(R"({"properties":{"a":{"type":"string","x-mcp-header":"My Region"}}})").ok());
  CHECK_FALSE(annotations(R"({"properties":{"a":{"type":"string","x-mcp-header":""}}})").ok());
  CHECK_FALSE(annotations(R"({"properties":{"a":{"type":"string","x-mcp-header":"X"},)"
                          R"("b":{"type":"string","x-mcp-header":"x"}}})")
                  .ok());
  CHECK_FALSE(
      annotations(R"({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}})").ok());
  CHECK_FALSE(annotations(R"({"oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]})").ok());
  CHECK(annotations(R"({"type":"object","properties":{"a":{"type":"string"}}})")->empty());
}

TEST_CASE("header values: =?base64?...?= decoded strictly, anything else literal", "[headers]") {
  CHECK(*ph::decode("us-west1") == "us-west1");
  CHECK(*ph::decode("=?base64?SGVsbG8=?=") == "Hello");
  CHECK(*ph::decode("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, \xe4\xb8\x96\xe7\x95\x8c");
  CHECK(*ph::decode("SGVsbG8=") == "SGVsbG8=");
  CHECK(*ph::decode("=?base64?SGVsbG8=") == "=?base64?SGVsbG8=");
  CHECK_FALSE(ph::decode("=?base64?SGVsbG8?=").ok());      // padding missing
  CHECK_FALSE(ph::decode("=?base64?SGVs!!!bG8=?=").ok());  // not the alphabet
  CHECK_FALSE(ph::decode("caf\xc3\xa9").ok());             // raw non-ASCII
  CHECK_FALSE(ph::decode("a\rb").ok());
  CHECK(*ph::decode("=?base64??=") == "");  // the empty value, as the TypeScript client sends it
}

TEST_CASE("header values: encoded exactly when a plain field would lose or mangle them", "[headers]") {
  // The spec's table of examples.
  CHECK(ph::encode("us-west1") == "us-west1");
  CHECK(ph::encode("Hello, \xe4\xb8\x96\xe7\x95\x8c") == "=?base64?SGVsbG8sIOS4lueVjA==?=");
  CHECK(ph::encode(" padded ") == "=?base64?IHBhZGRlZCA=?=");
  CHECK(ph::encode("line1\nline2") == "=?base64?bGluZTEKbGluZTI=?=");
  CHECK(ph::encode("=?base64?literal?=") == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
  // Inner spaces and tabs are field content; surrounding ones are stripped by field parsing.
  CHECK(ph::encode("a b\tc") == "a b\tc");
  CHECK(ph::encode("\tx") == "=?base64?CXg=?=");
  CHECK(ph::encode("x\t") == "=?base64?eAk=?=");
  CHECK(ph::encode("=?base64?") == "=?base64?");                     // not the sentinel pattern: no ?= after the prefix
  CHECK(ph::encode("=?base64?=") == "=?base64?PT9iYXNlNjQ/PQ==?=");  // the pattern, if overlapping
  CHECK(ph::encode("") == "=?base64??=");
  CHECK(ph::encode("caf\xc3\xa9") == "=?base64?Y2Fmw6k=?=");
  CHECK(ph::encode(std::string("a\0b", 3)) == "=?base64?YQBi?=");
}

TEST_CASE("header values: whatever is encoded decodes to itself", "[headers]") {
  for (std::string text : {"us-west1", " padded ", "line1\nline2", "=?base64?literal?=", "", "caf\xc3\xa9", "\t",
                           "\x7f", "a b", "?=", "=?base64?SGVsbG8=?=", "\xff\xfe"}) {
    auto back = ph::decode(ph::encode(text));
    REQUIRE(back.ok());
    CHECK(*back == text);
  }
}

TEST_CASE("Mcp-Param-* headers for a call: one per annotated argument present, as the server checks them",
          "[headers]") {
  auto found = annotations(kSchema);
  REQUIRE(found.ok());
  auto headers_for = [&](const char* arguments) {
    auto args = toolhost::sdk::parse_json(arguments);
    REQUIRE(args);
    return ph::headers_for(*found, &*args);
  };
  using pairs = ph::headers;
  CHECK(headers_for(R"({"region":"Z\u00fcrich","n":42,"deep":{"flag":false},"query":"q"})") ==
        pairs{{"Mcp-Param-Region", "=?base64?WsO8cmljaA==?="}, {"Mcp-Param-N", "42"}, {"Mcp-Param-Flag", "false"}});
  // Absent and null arguments have no header; 42.0 is the integer 42; -7 stays signed.
  CHECK(headers_for(R"({"region":null,"n":42.0})") == pairs{{"Mcp-Param-N", "42"}});
  CHECK(headers_for(R"({"n":-7})") == pairs{{"Mcp-Param-N", "-7"}});
  CHECK(headers_for(R"({"deep":"not an object"})").empty());
  // What no header can say exactly is left to the server's argument check.
  CHECK(headers_for(R"({"n":1.5})").empty());
  CHECK(headers_for(R"({"n":9007199254740992})").empty());
  CHECK(headers_for(R"({"n":{"x":1}})").empty());
  CHECK(ph::headers_for(*found, nullptr).empty());

  // Round trip: what the client sends is what the server accepts.
  const char* args = R"({"region":" Z\u00fcrich\n","n":9007199254740991,"deep":{"flag":true}})";
  ph::received received;
  for (auto& [name, value] : headers_for(args)) {
    received.emplace_back(absl::AsciiStrToLower(name.substr(ph::kPrefix.size())), value);
  }
  auto parsed = toolhost::sdk::parse_json(args);
  CHECK(ph::mismatch(*found, &*parsed, received).empty());
}

TEST_CASE("Mcp-Param-* headers must agree with the arguments they mirror", "[headers]") {
  const char* args = R"({"region":"us-west1","n":42,"deep":{"flag":true},"query":"q"})";
  CHECK(mismatch(kSchema, args, {{"region", "us-west1"}, {"n", "42"}, {"flag", "true"}}).empty());
  CHECK(mismatch(kSchema, args, {{"region", "=?base64?dXMtd2VzdDE=?="}, {"n", "42.0"}, {"flag", "true"}}).empty());
  CHECK_THAT(mismatch(kSchema, args, {{"n", "42"}, {"flag", "true"}}),
             Catch::Contains("Mcp-Param-Region header is missing"));
  CHECK_THAT(mismatch(kSchema, args, {{"region", "eu"}, {"n", "42"}, {"flag", "true"}}), Catch::Contains("'eu'"));
  CHECK_THAT(mismatch(kSchema, args, {{"region", "us-west1"}, {"n", "43"}, {"flag", "true"}}), Catch::Contains("N"));
  CHECK_FALSE(mismatch(kSchema, args, {{"region", "us-west1"}, {"n", "42"}, {"flag", "TRUE"}}).empty());
  // An argument that is absent or null has no header, and a header for it disagrees.
  CHECK(mismatch(kSchema, R"({"region":"r","n":null})", {{"region", "r"}}).empty());
  CHECK_FALSE(mismatch(kSchema, R"({"region":"r"})", {{"region", "r"}, {"n", "1"}}).empty());
  CHECK_THAT(mismatch(kSchema, args, {{"region", "us-west1"}, {"region", "eu"}, {"n", "42"}, {"flag", "true"}}),
             Catch::Contains("more than once"));
  // Headers no annotation names are not this check's business.
  CHECK(mismatch(kSchema, R"({})", {{"other", "x"}}).empty());
}

TEST_CASE("a requestState answers one round: a replay is refused", "[input-required]") {
  namespace ir = toolhost::mcp::input_required;
  const std::string bound = ir::binding("srv", "tools/call", "count", R"({"to":2})");
  const std::string state = ir::seal(bound, {"toolhost_approval"}, {});
  auto answers = toolhost::sdk::parse_json(R"({"toolhost_approval":{"action":"accept","content":{"approve":true}}})");
  auto first = ir::open(state, bound, &*answers);
  REQUIRE(first.ok());
  CHECK(first->count("toolhost_approval") == 1);
  auto replay = ir::open(state, bound, &*answers);
  REQUIRE_FALSE(replay.ok());
  CHECK_THAT(std::string(replay.status().message()), Catch::Contains("used already"));
  // A state for other arguments is refused before it is redeemed; its own call still opens it.
  const std::string other = ir::seal(bound, {"toolhost_approval"}, {});
  CHECK_FALSE(ir::open(other, ir::binding("srv", "tools/call", "count", R"({"to":3})"), &*answers).ok());
  CHECK(ir::open(other, bound, &*answers).ok());
}
