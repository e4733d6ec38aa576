// A plugin's settings against the schema it declares: each mistake is named with the place the
// person wrote it, in the file or on the command line.
#include <catch2/catch.hpp>

#include "host/config/config.hpp"
#include "host/plugins/settings_check.hpp"

namespace config = toolhost::config;
using toolhost::plugins::check_settings;

namespace {

constexpr const char* kSchema = R"({"type":"object","properties":{
  "timeout_ms":{"type":"integer","minimum":100,"maximum":600000},
  "mode":{"type":"string","enum":["fast","safe"]},
  "env":{"type":"object","additionalProperties":{"type":"string"}},
  "paths":{"type":"array","items":{"type":"string"}},
  "upstream":{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}}})";

// The problem check_settings finds in the settings of plugin "p" in server "s" of `toml`, after
// the --set overrides; "" when there is none.
std::string problem(const std::string& toml, std::vector<std::string> overrides = {}, const char* schema = kSchema,
                    bool listing = false) {
  auto cfg = config::parse("[servers.s]\nplugins = [\"p\"]\n" + toml, "t.toml", "/");
  REQUIRE(cfg.ok());
  for (const auto& spec : overrides) REQUIRE(config::override_setting(*cfg, spec).ok());
  const config::server& s = cfg->servers.front();
  const auto settings = s.settings.find("p");
  config::settings_origin origin;
  if (auto o = s.settings_origins.find("p"); o != s.settings_origins.end()) origin = o->second;
  if (origin.table.empty()) origin.table = s.source;
  const absl::Status st =
      check_settings(schema, settings != s.settings.end() ? settings->second : "{}", origin, {"p", "s", listing});
  return std::string(st.message());
}

}  // namespace

TEST_CASE("settings that fit the declared schema pass", "[settings]") {
  CHECK(problem("[servers.s.settings.p]\ntimeout_ms = 100\nmode = \"safe\"\nenv = { A = \"1\" }\n"
                "paths = [\"a\", \"b\"]\nupstream = { url = \"http://h\" }\n") == "");
  CHECK(problem("") == "");  // nothing required at the top
}

TEST_CASE("a misspelt setting is refused at its key, with the settings there are", "[settings]") {
  CHECK(problem("[servers.s.settings.p]\ntimeout_ms = 200\ntimeout_msec = 5\n") ==
        "t.toml:5:1: servers.s.settings.p.timeout_msec: p has no such setting (its settings: timeout_ms, mode, env, "
        "paths, upstream)");
  CHECK(problem("[servers.s.settings.p]\nupstream = { url = \"u\", uri = \"v\" }\n") ==
        "t.toml:4:25: servers.s.settings.p.upstream.uri: p has no such setting (settings under upstream: url)");
}

TEST_CASE("a value of the wrong type, range or choice is refused at its key", "[settings]") {
  CHECK(problem("[servers.s.settings.p]\ntimeout_ms = 5\n") ==
        "t.toml:4:1: servers.s.settings.p.timeout_ms: must be at least 100, not 5");
  CHECK(problem("[servers.s.settings.p]\n\n  timeout_ms = 600001\n") ==
        "t.toml:5:3: servers.s.settings.p.timeout_ms: must be at most 600000, not 600001");
  CHECK(problem("[servers.s.settings.p]\ntimeout_ms = \"5s\"\n") ==
        "t.toml:4:1: servers.s.settings.p.timeout_ms: must be integer, not string");
  CHECK(problem("[servers.s.settings.p]\nmode = \"quick\"\n") ==
        R"(t.toml:4:1: servers.s.settings.p.mode: must be one of "fast", "safe", not "quick")");
  CHECK(problem("[servers.s.settings.p]\npaths = [\"a\", 2]\n") ==
        "t.toml:4:15: servers.s.settings.p.paths[1]: must be string, not integer");
  CHECK(problem("[servers.s.settings.p]\nenv = { A = 1 }\n") ==
        "t.toml:4:9: servers.s.settings.p.env.A: must be string, not integer");
}

TEST_CASE("a missing required setting is named at the table that lacks it", "[settings]") {
  CHECK(problem("[servers.s.settings.p]\nupstream = {}\n") ==
        "t.toml:4:1: servers.s.settings.p.upstream.url: is required (string)");
  const char* required = R"({"type":"object","properties":{"url":{"type":"string"}},"required":["url"]})";
  // No settings table at all: the server's table is where one belongs.
  CHECK(problem("", {}, required) == "t.toml:1:1: servers.s.settings.p.url: is required (string)");
  // `toolhost plugins` lists without settings: nothing is required then.
  CHECK(problem("", {}, required, true) == "");
}

TEST_CASE("a value given with --set is checked and named by the flag", "[settings]") {
  CHECK(problem("[servers.s.settings.p]\ntimeout_ms = 200\n", {"p.timeout_ms=5"}) ==
        "--set p.timeout_ms=5: servers.s.settings.p.timeout_ms: must be at least 100, not 5");
  CHECK(problem("", {"p.timeout_msec=500"}) ==
        "--set p.timeout_msec=500: servers.s.settings.p.timeout_msec: p has no such setting (its settings: "
        "timeout_ms, mode, env, paths, upstream)");
  // --set replaces the file's array, and its items are the flag's.
  CHECK(problem("[servers.s.settings.p]\npaths = [\"a\"]\n", {R"(p.paths=["a",3])"}) ==
        R"(--set p.paths=["a",3]: servers.s.settings.p.paths[1]: must be string, not integer)");
  CHECK(problem("[servers.s.settings.p]\ntimeout_ms = 5\n", {"p.timeout_ms=500"}) == "");
}

TEST_CASE("a schema that is not a JSON object is the plugin's fault", "[settings]") {
  CHECK(problem("", {}, "[1]").find("settings schema is not a JSON object") != std::string::npos);
}
