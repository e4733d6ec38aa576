#include <catch2/catch.hpp>

#include "host/config/config.hpp"

using toolhost::config::parse;
using toolhost::config::permission;

namespace {
std::string error_of(const std::string& text) {
  auto c = parse(text, "t.toml", "/opt/toolhost/bin");
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}
}  // namespace

TEST_CASE("a full configuration is read", "[config]") {
  auto c = parse(R"(
plugin_dirs = ["{exe}/../plugins", "extra"]
default_server = "eleven"
page_size = 7
[permissions]
"eleven.rename" = "ask"
[servers.eleven]
description = "window"
plugins = ["eleven-window", "gpu-profile"]
review_edits = true
[servers.eleven.privacy]
hide_home_in_paths = true
[servers.eleven.permissions]
"eleven.rename" = "never"
[servers.eleven.settings.eleven-window]
timeout_ms = 5000
names = ["a", "b"]
[servers.other]
enabled = false
plugins = []
)",
                 "/etc/toolhost/t.toml", "/opt/toolhost/bin");
  REQUIRE(c.ok());
  CHECK(c->plugin_dirs == std::vector<std::string>{"/opt/toolhost/plugins", "/etc/toolhost/extra"});
  CHECK(c->page_size == 7);
  REQUIRE(c->servers.size() == 2);
  const auto* s = c->find_server("eleven");
  REQUIRE(s != nullptr);
  CHECK(s->plugins == std::vector<std::string>{"eleven-window", "gpu-profile"});
  CHECK(s->review_edits);
  CHECK(s->privacy.hide_home_in_paths);
  CHECK_FALSE(s->privacy.ask_before_whole_file);
  CHECK(s->settings.at("eleven-window") == R"({"names":["a","b"],"timeout_ms":5000})");
  // The server's own row wins over the global table; unknown kinds fall to their default.
  CHECK(c->permission_for(*s, "eleven.rename") == permission::never);
  CHECK(c->permission_for(*c->find_server("other"), "eleven.rename") == permission::ask);
  CHECK_FALSE(c->permission_for(*s, "nothing").has_value());
  CHECK_FALSE(c->find_server("other")->enabled);
}

TEST_CASE("configuration errors name file, line, column and key", "[config]") {
  CHECK(error_of("plugin_dirs = [\"a\"\nx = 1") .rfind("t.toml:", 0) == 0);
  CHECK(error_of("[servers.a]\nplugins = \"example\"\n") ==
        "t.toml:2:11: servers.a.plugins: expected an array of strings, like [\"a\", \"b\"]");
  CHECK(error_of("[servers.a]\nplugins = [1]\n") == "t.toml:2:12: servers.a.plugins: every item must be a string");
  CHECK(error_of("[permissions]\n\"x\" = \"maybe\"\n") ==
        "t.toml:2:7: permissions.x: expected \"allow\", \"ask\" or \"never\"");
  CHECK(error_of("[servers.a]\nplugin = []\n").find("t.toml:2:10: servers.a.plugin: unknown key; expected one of: "
                                                    "description, enabled, plugins") == 0);
  CHECK(error_of("default_server = \"nope\"\n") ==
        "t.toml:1:18: default_server: no [servers.nope] table declares this server");
  CHECK(error_of("page_size = 0\n") == "t.toml:1:13: page_size: must be between 1 and 10000");
  CHECK(error_of("[servers.\"bad name\"]\n").find("servers.bad name: server names use") != std::string::npos);
  CHECK(error_of("[servers.a.settings]\nx = 1\n") ==
        "t.toml:2:5: servers.a.settings.x: expected a table of this plugin's settings");
}

TEST_CASE("a missing configuration file is a clear error", "[config]") {
  auto c = toolhost::config::load("/nonexistent/toolhost.toml", "/");
  REQUIRE_FALSE(c.ok());
  CHECK(std::string(c.status().message()).find("/nonexistent/toolhost.toml: cannot read the configuration file") == 0);
}

TEST_CASE("a setting override (--set) changes one plugin setting in every server that serves the plugin", "[config]") {
  auto c = parse(R"(
[servers.ntoseye]
plugins = ["debugger", "gdb-backend"]
[servers.ntoseye.settings.debugger]
backend = "kd"
keep = 1
[servers.other]
plugins = ["example"]
)",
                 "t.toml", "/");
  REQUIRE(c.ok());
  REQUIRE(toolhost::config::override_setting(*c, "debugger.backend=gdb").ok());
  REQUIRE(toolhost::config::override_setting(*c, "debugger.connect=127.0.0.1:1234").ok());
  REQUIRE(toolhost::config::override_setting(*c, "gdb-backend.timeout_ms=500").ok());
  CHECK(c->find_server("ntoseye")->settings.at("debugger") ==
        R"({"keep":1,"backend":"gdb","connect":"127.0.0.1:1234"})");
  CHECK(c->find_server("ntoseye")->settings.at("gdb-backend") == R"({"timeout_ms":500})");
  CHECK(c->find_server("other")->settings.count("debugger") == 0);
  auto s = toolhost::config::override_setting(*c, "nobody.x=1");
  CHECK(std::string(s.message()) == "no server in the config serves plugin 'nobody', so 'nobody.x=1' would change nothing");
  CHECK_FALSE(toolhost::config::override_setting(*c, "no-dot=1").ok());
}
