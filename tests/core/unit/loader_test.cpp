#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "host/mcp/server.hpp"
#include "host/plugins/instance.hpp"
#include "host/plugins/loader.hpp"

using namespace toolhost;
using plugins::load_status;

namespace {

struct no_events : plugins::host_events {
  void list_changed(std::string_view, uint32_t) override {}
  void resource_updated(std::string_view) override {}
  void log(toolhost_log_level_t, std::string_view, std::string_view) override {}
};

const plugins::library& open(plugins::loader& l, const char* file) {
  l.load_all();
  for (const auto& lib : l.libraries()) {
    if (lib->path == std::string(FIXTURE_DIR) + "/" + file) return *lib;
  }
  FAIL("fixture " << file << " was not scanned");
  throw 0;
}

}  // namespace

TEST_CASE("each broken library gets its own status and a message naming file and remedy", "[loader]") {
  plugins::loader l({FIXTURE_DIR});
  const auto& text = open(l, "not-a-plugin.so");
  CHECK(text.status == load_status::not_shared_library);
  CHECK(text.message.find("not-a-plugin.so could not be loaded as a shared library") != std::string::npos);

  const auto& missing = open(l, "fixture-missing-symbol.so");
  CHECK(missing.status == load_status::missing_symbol);
  CHECK(missing.message.find("fixture-missing-symbol.so needs the symbol fixture_symbol_nobody_defines, which "
                             "neither toolhost nor the libraries the plugin links provide") != std::string::npos);

  const auto& no_entry = open(l, "fixture-no-entry.so");
  CHECK(no_entry.status == load_status::no_entry_symbol);
  CHECK(no_entry.message.find("exports no toolhost_plugin_entry symbol") != std::string::npos);

  const auto& major = open(l, "fixture-abi-major.so");
  CHECK(major.status == load_status::wrong_abi);
  CHECK(major.message.find("built for toolhost plugin ABI 2.0 but this toolhost speaks ABI 1.1") != std::string::npos);
  CHECK(major.message.find("rebuild the plugin") != std::string::npos);

  const auto& minor = open(l, "fixture-abi-minor.so");
  CHECK(minor.status == load_status::wrong_abi);
  CHECK(minor.message.find("needs toolhost plugin ABI 1.99 but this toolhost provides 1.1") != std::string::npos);

  const auto& good = open(l, "fixture-good.so");
  CHECK(good.status == load_status::loaded);
  CHECK(good.id == "fixture-good");
  CHECK(good.version == "0.0.1");
}

TEST_CASE("an init that fails withdraws what it registered", "[loader]") {
  plugins::loader l({FIXTURE_DIR});
  plugins::library* lib = l.find("fixture-init-fails");
  REQUIRE(lib != nullptr);
  plugins::registry reg("s");
  no_events events;
  plugins::instance inst(*lib, reg, events, "s", "/", "{}");
  CHECK_FALSE(inst.init());
  CHECK(inst.status() == load_status::init_failed);
  CHECK(inst.message().find("the fixture refuses to start: setting 'needed' is missing") != std::string::npos);
  CHECK(inst.message().find("[servers.s.settings.fixture-init-fails]") != std::string::npos);
  CHECK(reg.find_tool("fixture_withdrawn") == nullptr);
}

TEST_CASE("an init that throws through the C entry is caught", "[loader]") {
  plugins::loader l({FIXTURE_DIR});
  plugins::library* lib = l.find("fixture-init-throws");
  REQUIRE(lib != nullptr);
  plugins::registry reg("s");
  no_events events;
  plugins::instance inst(*lib, reg, events, "s", "/", "{}");
  CHECK_FALSE(inst.init());
  CHECK(inst.status() == load_status::init_failed);
  CHECK(inst.message().find("threw from init (fixture init exploded)") != std::string::npos);
}

TEST_CASE("an init that crashes is contained (run in a child process)", "[loader]") {
  // The child loads the crashing fixture through the real loader; the crash guard must turn the
  // SIGSEGV into a reported status and let the child carry on and exit normally.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    plugins::loader l({FIXTURE_DIR});
    plugins::library* lib = l.find("fixture-init-crashes");
    if (lib == nullptr) _exit(10);
    plugins::registry reg("s");
    no_events events;
    plugins::instance inst(*lib, reg, events, "s", "/", "{}");
    if (inst.init()) _exit(11);
    if (inst.status() != load_status::init_crashed) _exit(12);
    if (inst.message().find("crashed in init with SIGSEGV") == std::string::npos) _exit(13);
    if (reg.find_tool("fixture_crashed") != nullptr) _exit(14);
    // A good plugin still loads in the same process afterwards.
    plugins::library* good = l.find("fixture-good");
    plugins::instance ok(*good, reg, events, "s", "/", "{}");
    _exit(ok.init() && reg.find_tool("fixture_echo") != nullptr ? 0 : 15);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a duplicate tool name fails the second plugin, naming both", "[loader]") {
  plugins::loader l({FIXTURE_DIR});
  plugins::registry reg("s");
  no_events events;
  plugins::instance example(*l.find("example"), reg, events, "s", "/", "{}");
  REQUIRE(example.init());
  plugins::instance dup(*l.find("fixture-duplicate-tool"), reg, events, "s", "/", "{}");
  CHECK_FALSE(dup.init());
  CHECK(dup.status() == load_status::duplicate_name);
  CHECK(dup.message().find("tool 'count' of plugin 'fixture-duplicate-tool' is already registered by plugin "
                           "'example' in server 's'") != std::string::npos);
  CHECK(reg.find_tool("count")->owner == "example");
  example.deinit();
}
