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
  CHECK(error_of("plugin_dirs = [\"a\"\nx = 1").rfind("t.toml:", 0) == 0);
  CHECK(error_of("[servers.a]\nplugins = \"example\"\n") ==
        "t.toml:2:11: servers.a.plugins: expected an array of strings, like [\"a\", \"b\"]");
  CHECK(error_of("[servers.a]\nplugins = [1]\n") == "t.toml:2:12: servers.a.plugins: every item must be a string");
  CHECK(error_of("[permissions]\n\"x\" = \"maybe\"\n") ==
        "t.toml:2:7: permissions.x: expected \"allow\", \"ask\" or \"never\"");
  CHECK(error_of("[servers.a]\nplugin = []\n")
            .find("t.toml:2:10: servers.a.plugin: unknown key; expected one of: "
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
  CHECK(std::string(s.message()) ==
        "no server in the config serves plugin 'nobody', so 'nobody.x=1' would change nothing");
  CHECK_FALSE(toolhost::config::override_setting(*c, "no-dot=1").ok());
}

TEST_CASE("an overlay names only what differs; errors name the file that wrote the value", "[config]") {
  auto c = toolhost::config::parse_layers(
      {{"/etc/base.toml",
        "plugin_dirs = [\"plugins\"]\n[permissions]\n\"a.x\" = \"ask\"\n[servers.s]\nplugins = [\"p\", \"q\"]\n"
        "[servers.s.settings.p]\nkeep = 1\nchange = 1\n"},
       {"/home/al/over.toml",
        "[permissions]\n\"a.y\" = \"never\"\n[servers.s]\nplugins = [\"p\"]\n[servers.s.settings.p]\nchange = 2\n"}},
      "/opt/bin");
  REQUIRE(c.ok());
  CHECK(c->overlays == std::vector<std::string>{"/home/al/over.toml"});
  CHECK(c->plugin_dirs == std::vector<std::string>{"/etc/plugins"});
  CHECK(c->permissions.at("a.x").value == permission::ask);
  CHECK(c->permissions.at("a.x").source == "/etc/base.toml:3:1");
  CHECK(c->permissions.at("a.y").value == permission::never);
  CHECK(c->permissions.at("a.y").source == "/home/al/over.toml:2:1");
  const auto* s = c->find_server("s");
  REQUIRE(s != nullptr);
  CHECK(s->plugins == std::vector<std::string>{"p"});  // arrays are replaced, not merged
  CHECK(s->settings.at("p") == R"({"change":2,"keep":1})");
  auto bad = toolhost::config::parse_layers(
      {{"/etc/base.toml", "[servers.s]\nplugins = []\n"}, {"/home/al/over.toml", "[servers.s]\nenabled = \"no\"\n"}},
      "/opt/bin");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()) == "/home/al/over.toml:2:11: servers.s.enabled: expected true or false");
}

TEST_CASE("the allow, deny and ask flags win over every table for one run", "[config]") {
  auto c =
      parse("[permissions]\n\"k\" = \"ask\"\n[servers.s]\nplugins = []\n[servers.s.permissions]\n\"k\" = \"never\"\n",
            "t.toml", "/");
  REQUIRE(c.ok());
  CHECK(c->permission_for(*c->find_server("s"), "k") == permission::never);
  REQUIRE(toolhost::config::override_permission(*c, "k", permission::allow, "--allow").ok());
  CHECK(c->permission_for(*c->find_server("s"), "k") == permission::allow);
  CHECK(c->permission_row_for(*c->find_server("s"), "k")->source == "--allow k");
}

TEST_CASE("call_timeout_ms per server and per tool", "[config]") {
  auto c = parse(
      "[servers.s]\nplugins = []\ncall_timeout_ms = 1000\n[servers.s.tools.slow]\ncall_timeout_ms = 9000\n"
      "[servers.s.tools.other]\n",
      "t.toml", "/");
  REQUIRE(c.ok());
  const auto* s = c->find_server("s");
  CHECK(s->call_timeout_for("slow") == 9000);
  CHECK(s->call_timeout_for("other") == 1000);
  CHECK(s->call_timeout_for("anything") == 1000);
  CHECK(error_of("[servers.s]\ncall_timeout_ms = -1\n") ==
        "t.toml:2:19: servers.s.call_timeout_ms: must be between 0 and 86400000");
  CHECK(error_of("[servers.s.tools.x]\ntimeout = 1\n")
            .find("t.toml:2:11: servers.s.tools.x.timeout: unknown key; expected one of: call_timeout_ms") == 0);
}

TEST_CASE("nesting is limited before the TOML parser recurses", "[config]") {
  std::string deep = "a";
  for (int i = 0; i < 50000; ++i) deep += ".b";
  CHECK(error_of(deep + " = 1\n") ==
        "t.toml:1:128: a dotted key or table header has too many parts (toolhost allows 64)");
  CHECK(error_of(std::string(100, '[') + std::string(100, ']')).find("arrays or inline tables nest too deeply") !=
        std::string::npos);
  // Dots in strings, comments and numbers are not key parts.
  std::string many_dots(200, '.');
  CHECK(parse("# " + many_dots + "\n[servers.s]\nplugins = []\ndescription = \"" + many_dots + "\"\n", "t.toml", "/")
            .ok());
  CHECK(parse("x = '''\n" + many_dots + "\n'''\n", "t.toml", "/").status().message().find("unknown key") !=
        std::string::npos);
}

TEST_CASE("without --config nothing in the current folder is read", "[config]") {
  const auto d = toolhost::config::discover("", "/nonexistent/bin");
  for (const auto& place : d.looked) CHECK(place.rfind("config/", 0) != 0);
  CHECK(d.looked.back() == "/nonexistent/share/toolhost/toolhost.toml");
  CHECK(toolhost::config::discover("x.toml", "/").path == "x.toml");
}
