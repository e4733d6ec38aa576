// A stripped program gets its names back from its separate debug file (issue 20): the -O0 stack
// program stripped of every symbol and of its DWARF, the debug file found by .gnu_debuglink
// (beside it) or by build-id (in a debuginfod client cache, $DEBUGINFOD_CACHE_PATH). gdb's bt on
// the debuglink copy is the oracle for the names and lines; without the debug file the names are
// gone, so they can only have come from it.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <toolhost/sdk/json.hpp>

#include "gdb_oracle.hpp"
#include "gdbserver_process.hpp"
#include "stack_tools.hpp"
#include "tool_answer.hpp"

namespace fs = std::filesystem;
using toolhost::testing::frame_name;
using toolhost::testing::unpack;

namespace {

const std::string kDir = SEPARATE_DEBUG_DIR;

toolhost::testing::answer run(toolhost::debugger::debugger_tools& tools, const std::string& line,
                              const std::string& format = "text") {
  return unpack(tools.command(line, 20000, format, [] { return false; }));
}

// The program's frames at `leaf`, down to main (gdb stops its bt there by default).
std::vector<frame_name> our_frames(toolhost::debugger::debugger_tools& tools) {
  auto k = run(tools, "k", "json");
  INFO(k.text);
  auto doc = toolhost::sdk::parse_json(k.structured);
  REQUIRE(doc);
  std::vector<frame_name> out;
  for (const auto& f : (*doc)["result"]["frames"].GetArray()) {
    frame_name n{f["function"].GetString(), "", 0};
    if (f.HasMember("source")) {
      n.file = toolhost::testing::base_name(f["source"]["file"].GetString());
      n.line = f["source"]["line"].GetInt();
    }
    out.push_back(n);
    if (n.function == "main") break;
  }
  return out;
}

std::string build_id(const std::string& file) {
  FILE* p = popen(("readelf -n '" + file + "'").c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, p)) out.append(buffer, n);
  pclose(p);
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("Build ID: ([0-9a-f]+)")));
  return m[1];
}

// Stops the stripped `program` at leaf (by the name only its debug file knows) and returns k's
// frames; the lm line of the program in `lm_line`.
std::vector<frame_name> frames_at_leaf(const std::string& program, std::string& lm_line) {
  toolhost::testing::gdbserver_process server(program);
  auto tools = toolhost::testing::make_stack_tools();
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
  const std::string exe = toolhost::debugger::module_name_of(program);
  auto stop = run(*tools, "bp " + exe + "!leaf; g");
  INFO(stop.text);
  REQUIRE(stop.text.find("Breakpoint 0 hit") != std::string::npos);
  auto lm = run(*tools, "lm m " + exe);
  lm_line = lm.text;
  // The parameters are known too (at the entry, before the prologue stores them).
  auto dv = run(*tools, "dv");
  CHECK(dv.text.find(" n = ") != std::string::npos);
  CHECK(dv.text.find(" p = ") != std::string::npos);
  return our_frames(*tools);
}

}  // namespace

TEST_CASE("a stripped program gets its names back from its separate debug file", "[debug-file]") {
  const std::string debuglink = kDir + "/stack_debuglink";
  const std::string buildid = kDir + "/stack_buildid";
  // gdb finds the debuglink copy's debug file beside it: its bt is the oracle for both copies.
  const auto expected_all = toolhost::testing::parse_backtrace(
      toolhost::testing::gdb_batch(debuglink, {"break main", "run", "break *leaf", "continue", "bt"}));
  REQUIRE(expected_all.size() >= 5);
  const std::vector<frame_name>& expected = expected_all;
  const std::string empty_cache = fs::temp_directory_path() / ("toolhost-no-debuginfo-" + std::to_string(getpid()));
  fs::create_directories(empty_cache);
  setenv("DEBUGINFOD_CACHE_PATH", empty_cache.c_str(), 1);

  SECTION("by .gnu_debuglink, beside the program") {
    std::string lm;
    CHECK(frames_at_leaf(debuglink, lm) == expected);
    INFO(lm);
    CHECK(lm.find("(dwarf symbols)") != std::string::npos);
    CHECK(lm.find("stack_debuglink.debug") != std::string::npos);
  }

  SECTION("by build-id, in a debuginfod client cache") {
    const std::string cache = fs::temp_directory_path() / ("toolhost-debuginfod-" + std::to_string(getpid()));
    fs::create_directories(cache + "/" + build_id(buildid));
    fs::copy_file(kDir + "/buildid-debuginfo", cache + "/" + build_id(buildid) + "/debuginfo",
                  fs::copy_options::overwrite_existing);
    setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
    std::string lm;
    CHECK(frames_at_leaf(buildid, lm) == expected);
    INFO(lm);
    CHECK(lm.find(cache) != std::string::npos);
    fs::remove_all(cache);
  }

  SECTION("without the debug file the names are not there") {
    toolhost::testing::gdbserver_process server(buildid);
    auto tools = toolhost::testing::make_stack_tools();
    REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
    auto bp = run(*tools, "bp stack_buildid!leaf");
    CHECK(bp.error);
    CHECK(bp.text.find("no symbol 'leaf'") != std::string::npos);
  }

  unsetenv("DEBUGINFOD_CACHE_PATH");
  fs::remove_all(empty_cache);
}
