#include <catch2/catch.hpp>

#include "host/plugins/registry.hpp"

using namespace toolhost::plugins;

namespace {
tool make_tool(std::string name, std::string owner, std::string kind = kRunKind) {
  tool t;
  t.name = std::move(name);
  t.owner = std::move(owner);
  t.permission_kind = std::move(kind);
  return t;
}
}  // namespace

TEST_CASE("a duplicate tool name is refused naming both plugins", "[registry]") {
  registry r("eleven");
  REQUIRE(r.add_tool(make_tool("open", "a")).ok());
  auto s = r.add_tool(make_tool("open", "b"));
  REQUIRE(s.code() == absl::StatusCode::kAlreadyExists);
  const std::string m(s.message());
  CHECK(m.find("plugin 'b'") != std::string::npos);
  CHECK(m.find("plugin 'a'") != std::string::npos);
  CHECK(m.find("server 'eleven'") != std::string::npos);
}

TEST_CASE("tool names follow MCP's rule", "[registry]") {
  registry r("s");
  CHECK(r.add_tool(make_tool("a.b-c_D9", "p")).ok());
  CHECK_FALSE(r.add_tool(make_tool("", "p")).ok());
  CHECK_FALSE(r.add_tool(make_tool("has space", "p")).ok());
  CHECK_FALSE(r.add_tool(make_tool(std::string(65, 'x'), "p")).ok());
  CHECK(r.add_tool(make_tool(std::string(64, 'y'), "p")).ok());
}

TEST_CASE("a tool must name a registered permission kind", "[registry]") {
  registry r("s");
  CHECK_FALSE(r.add_tool(make_tool("t", "p", "nope")).ok());
  REQUIRE(r.add_permission_kind({"k", "Do things", toolhost::config::permission::allow, "p"}).ok());
  CHECK(r.add_tool(make_tool("t", "p", "k")).ok());
  // The same row may be shared; the same id with another label may not.
  CHECK(r.add_permission_kind({"k", "Do things", toolhost::config::permission::allow, "q"}).ok());
  CHECK_FALSE(r.add_permission_kind({"k", "Other", toolhost::config::permission::allow, "q"}).ok());
}

TEST_CASE("withdraw removes everything one plugin registered", "[registry]") {
  registry r("s");
  REQUIRE(r.add_permission_kind({"k", "K", toolhost::config::permission::ask, "p"}).ok());
  REQUIRE(r.add_tool(make_tool("t1", "p", "k")).ok());
  REQUIRE(r.add_tool(make_tool("t2", "q")).ok());
  REQUIRE(r.add_transport({"debug-target", "gdb", &r, "p"}).ok());
  r.add_instructions("p", "from p");
  r.add_instructions("q", "from q");
  r.withdraw("p");
  CHECK(r.find_tool("t1") == nullptr);
  CHECK(r.find_tool("t2") != nullptr);
  CHECK(r.find_kind("k") == nullptr);
  CHECK(r.find_kind(kRunKind) != nullptr);
  CHECK(r.find_transport("debug-target", "gdb") == nullptr);
  CHECK(r.instructions() == "from q");
}
