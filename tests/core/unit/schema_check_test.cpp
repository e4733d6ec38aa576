#include <catch2/catch.hpp>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/schema_check.hpp>

using toolhost::sdk::check_arguments;
using toolhost::sdk::parse_json;

namespace {
std::optional<std::string> check(const char* schema, const char* args) {
  auto s = parse_json(schema);
  auto a = parse_json(args);
  REQUIRE(s);
  REQUIRE(a);
  return check_arguments(*s, *a);
}
constexpr const char* kSchema = R"({"type":"object","properties":{
  "name":{"type":"string"},"n":{"type":"integer"},"view":{"type":"string","enum":["hex","graph"]},
  "opts":{"type":"object","properties":{"deep":{"type":"boolean"}},"required":["deep"]},
  "list":{"type":"array","items":{"type":"number"}}},
  "required":["name"],"additionalProperties":false})";
}  // namespace

TEST_CASE("arguments that fit the schema pass", "[schema]") {
  CHECK_FALSE(check(kSchema, R"({"name":"x","n":3,"view":"hex","opts":{"deep":true},"list":[1,2.5]})"));
  CHECK_FALSE(check(kSchema, R"({"name":"x","n":3.0})"));
}

TEST_CASE("each mistake is named so the model can fix it", "[schema]") {
  CHECK(check(kSchema, "{}") == "'name' is required (string)");
  CHECK(check(kSchema, R"({"name":1})") == "'name' must be string, not integer");
  CHECK(check(kSchema, R"({"name":"x","n":1.5})") == "'n' must be integer, not number");
  CHECK(check(kSchema, R"({"name":"x","view":"text"})") == R"('view' must be one of "hex", "graph", not "text")");
  CHECK(check(kSchema, R"({"name":"x","opts":{}})") == "'opts.deep' is required (boolean)");
  CHECK(check(kSchema, R"({"name":"x","list":[1,"a"]})") == "'list[1]' must be number, not string");
  CHECK(check(kSchema, R"({"name":"x","extra":1})") == "'extra' is not an argument of this tool");
  CHECK(check(kSchema, "[]") == "the arguments must be a JSON object");
}
