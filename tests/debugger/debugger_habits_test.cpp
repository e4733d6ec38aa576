// Debugger habits (issue 16 item 6): what a WinDbg user types and expects, on a real gdbserver.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "gdbserver_process.hpp"
#include "stack_tools.hpp"
#include "tool_answer.hpp"

using toolhost::testing::answer;
using toolhost::testing::unpack;

namespace {

answer run(toolhost::debugger::debugger_tools& tools, const std::string& line, int64_t timeout_ms = 10000) {
  auto a = unpack(tools.command(line, timeout_ms, "text", [] { return false; }));
  UNSCOPED_INFO("> " << line << "\n" << a.text);
  return a;
}

std::string command_output(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, p)) out.append(buffer, n);
  pclose(p);
  return out;
}

}  // namespace

TEST_CASE("u spells condition codes as WinDbg and objdump do (jg, not jnle)", "[habits]") {
  // GNU objdump is the oracle: the mnemonic at each offset of the function.
  const std::string dump = command_output("objdump -d -M intel --no-show-raw-insn '" CONDITIONS_PROGRAM "'");
  std::map<uint64_t, std::string> expected;
  {
    std::istringstream lines(dump.substr(dump.find("<conditions>:")));
    const std::regex row(R"(^\s*([0-9a-f]+):\s+(\S+))");
    uint64_t start = 0;
    std::string line;
    std::getline(lines, line);
    for (; std::getline(lines, line) && !line.empty();) {
      std::smatch m;
      if (!std::regex_search(line, m, row)) continue;
      const uint64_t at = std::stoull(m[1], nullptr, 16);
      if (expected.empty()) start = at;
      expected[at - start] = m[2];
    }
  }
  REQUIRE(expected.size() == 50);  // 16 jumps, 16 sets, 16 moves, jrcxz, ret

  toolhost::testing::gdbserver_process server(CONDITIONS_PROGRAM);
  auto tools = toolhost::testing::make_stack_tools();
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
  const std::string exe = toolhost::debugger::module_name_of(CONDITIONS_PROGRAM);
  auto uf = run(*tools, "uf " + exe + "!conditions");
  REQUIRE_FALSE(uf.error);
  std::map<uint64_t, std::string> shown;
  std::istringstream lines(uf.text);
  const std::regex row(R"(^([0-9a-f]{8})`([0-9a-f]{8}) [0-9a-f]+\s+(\S+))");
  uint64_t start = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    const uint64_t at = std::stoull(m[1].str() + m[2].str(), nullptr, 16);
    if (shown.empty()) start = at;
    shown[at - start] = m[3];
  }
  CHECK(shown == expected);
  tools->close();
}

TEST_CASE("q and qd are refused with the reason, .detach releases the target and it runs on", "[habits]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM);
  auto tools = toolhost::testing::make_stack_tools();
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
  REQUIRE_FALSE(run(*tools, "bp gdb_demo_program!report; g").error);
  for (const char* quit : {"q", "qd", "quit"}) {
    auto refused = run(*tools, quit);
    CHECK(refused.error);
    CHECK(refused.text.find("'" + std::string(quit) + "' is refused here") != std::string::npos);
    CHECK(refused.text.find("`.detach`") != std::string::npos);
    CHECK(refused.text.find("[target halted @ ") != std::string::npos);  // still attached
  }
  // Stopped at report, with a breakpoint on step_target that main never reaches again: after
  // .detach the program prints its message and value and exits, the session is gone.
  REQUIRE_FALSE(run(*tools, "bp gdb_demo_program!step_target").error);
  auto detached = run(*tools, ".detach; k");
  CHECK_FALSE(detached.error);
  CHECK(detached.text.find("Detached from gdb at " + server.address()) != std::string::npos);
  CHECK(detached.text.find("The commands after .detach on the line were not run") != std::string::npos);
  CHECK(detached.text.find("[no target]") != std::string::npos);
  CHECK(server.wait_for_output("value=22"));
  auto after = run(*tools, "k");
  CHECK(after.error);
  CHECK(after.text.find("No target is attached") != std::string::npos);
}

TEST_CASE("break on a process gdbserver attached to: the break-in stays pending and the way out is named", "[habits]") {
  // The program runs in this test's process group, which it does not lead: gdbserver's
  // interrupt (a SIGINT to the inferior's process group) cannot reach it.
  const pid_t spinner = fork();
  REQUIRE(spinner >= 0);
  if (spinner == 0) {
    execl(DEMO_PROGRAM, DEMO_PROGRAM, "spin", static_cast<char*>(nullptr));
    _exit(127);
  }
  REQUIRE(getpgid(spinner) != spinner);
  {
    toolhost::testing::gdbserver_process server("--attach", {std::to_string(spinner)});
    auto tools = toolhost::testing::make_stack_tools();
    REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
    REQUIRE(run(*tools, "g", 200).text.find("[target running]") != std::string::npos);
    auto broke = run(*tools, "break", 1500);
    CHECK(broke.error);
    CHECK(broke.text.find("could not interrupt it") != std::string::npos);
    CHECK(broke.text.find("`gdbserver --attach`") != std::string::npos);
    CHECK(broke.text.find("`kill -INT " + std::to_string(spinner) + "`") != std::string::npos);
    // Before: "nothing is set to stop it; use `break` first", the loop the issue describes. Now
    // a halted-only command waits for the pending break-in, and says the same when it times out.
    auto waiting = run(*tools, "k", 300);
    CHECK(waiting.error);
    CHECK(waiting.text.find("'k' was not run") != std::string::npos);
    CHECK(waiting.text.find("The break-in stays pending") != std::string::npos);
    // The way out: the signal from outside stops it, and the waiting command runs.
    REQUIRE(kill(spinner, SIGINT) == 0);
    auto stack = run(*tools, "k", 10000);
    CHECK_FALSE(stack.error);
    CHECK(stack.text.find("gdb_demo_program!spin") != std::string::npos);
    tools->close();
  }
  kill(spinner, SIGKILL);
  waitpid(spinner, nullptr, 0);
}
