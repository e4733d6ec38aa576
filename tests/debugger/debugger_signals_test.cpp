// Signals reach the program being debugged (issue 24): a program with SIGUSR1, SIGALRM and
// SIGCHLD handlers behaves under the debugger, through a real gdbserver, as it does without
// one; handler breakpoints are reached; sxe/sxd/sxn/sxi, gh and gn do what WinDbg users expect;
// a SIGSEGV shows its faulting address and then ends the program as it would alone. gdb's own
// `info signals` is the oracle for the default table.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <toolhost/sdk/json.hpp>

#include "dump_factory.hpp"
#include "gdbserver_process.hpp"
#include "target_adapter.hpp"
#include "tool_answer.hpp"
#include "tools.hpp"

using toolhost::debugger::debugger_tools;
using toolhost::testing::answer;
using toolhost::testing::trailer;
using toolhost::testing::unpack;

namespace {

struct debugged {
  toolhost::testing::gdbserver_process server;
  std::unique_ptr<debugger_tools> tools;
  explicit debugged(std::vector<std::string> args = {}) : server(SIGNALS_PROGRAM, std::move(args)) {
    tools = std::make_unique<debugger_tools>(
        [](const std::string& name) { return name == "gdb" ? toolhost::gdb::factory() : nullptr; },
        toolhost::debugger::launch_settings{});
    auto opened = unpack(tools->open("gdb", server.address(), ""));
    INFO(opened.text);
    REQUIRE_FALSE(opened.error);
  }
  answer run(const std::string& line, const std::string& format = "text") {
    auto a = unpack(tools->command(line, 20000, format, [] { return false; }));
    UNSCOPED_INFO("> " << line << "\n" << a.text);
    return a;
  }
};

// The program alone: its output and its wait status.
std::pair<std::string, int> run_alone(const std::string& arg) {
  int out[2];
  REQUIRE(pipe(out) == 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    std::vector<char*> argv = {const_cast<char*>(SIGNALS_PROGRAM)};
    std::string a = arg;
    if (!a.empty()) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(SIGNALS_PROGRAM, argv.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  std::array<char, 256> buffer{};
  for (ssize_t n; (n = read(out[0], buffer.data(), buffer.size())) > 0;)
    text.append(buffer.data(), static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {text, status};
}

// Runs `g` until the program exits; every stop on the way is collected.
std::string run_to_exit(debugged& d) {
  std::string seen;
  for (int i = 0; i < 20; ++i) {
    auto a = d.run("g");
    seen += a.text;
    if (trailer(a) == "[target exited]") return seen;
  }
  FAIL("the program did not exit:\n" << seen);
  return seen;
}

const std::string kExe = "debugger_signals_program";

}  // namespace

TEST_CASE("with no breakpoints the program's output equals its output without a debugger", "[signals]") {
  const auto [alone, status] = run_alone("");
  REQUIRE(WIFEXITED(status));
  REQUIRE(alone.find("done") != std::string::npos);
  debugged d;
  // SIGUSR1 stops by default (gdb's table); g delivers it, and SIGALRM and SIGCHLD pass by
  // themselves.
  auto first = d.run("g");
  CHECK(first.text.find("Signal SIGUSR1 (10)") != std::string::npos);
  auto last = d.run("g");
  CHECK(trailer(last) == "[target exited]");
  CHECK(last.text.find("The target exited: exited with status " + std::to_string(WEXITSTATUS(status))) !=
        std::string::npos);
  CHECK(d.server.wait_for_output("done\n"));
  CHECK(d.server.program_output() == alone);
}

TEST_CASE("g reaches a breakpoint in every handler", "[signals]") {
  const auto alone = run_alone("").first;
  debugged d;
  REQUIRE_FALSE(d.run("bp " + kExe + "!on_usr1; bp " + kExe + "!on_alrm; bp " + kExe + "!on_chld").error);
  auto usr1 = d.run("g");
  CHECK(usr1.text.find("Signal SIGUSR1 (10) User defined signal 1 - code SI_TKILL") != std::string::npos);
  CHECK(usr1.text.find("from process ") != std::string::npos);
  CHECK(usr1.text.find("`g` or `gn` delivers SIGUSR1 to the program; `gh` resumes without it") != std::string::npos);
  auto json = d.run("r rip", "json");
  auto doc = toolhost::sdk::parse_json(json.structured);
  REQUIRE(doc);
  CHECK((*doc)["target"]["signal"]["name"].GetString() == std::string("SIGUSR1"));
  CHECK((*doc)["target"]["signal"]["pending"].GetBool());

  for (const char* handler : {"on_usr1", "on_alrm", "on_chld"}) {
    auto hit = d.run("g");
    CHECK(hit.text.find("Breakpoint ") != std::string::npos);
    CHECK(trailer(hit).find(kExe + "!" + handler + " ") != std::string::npos);
  }
  auto end = d.run("g");
  CHECK(trailer(end) == "[target exited]");
  CHECK(d.server.wait_for_output("done\n"));
  CHECK(d.server.program_output() == alone);
}

TEST_CASE("sxi, sxn and sxd keep a signal from stopping; sxe makes one stop", "[signals]") {
  const auto alone = run_alone("").first;
  SECTION("sxi: delivered in the background without a word") {
    debugged d;
    REQUIRE_FALSE(d.run("sxi SIGUSR1").error);
    auto end = d.run("g");
    CHECK(trailer(end) == "[target exited]");
    CHECK(end.text.find("SIGUSR1") == std::string::npos);
    CHECK(d.server.wait_for_output("done\n"));
    CHECK(d.server.program_output() == alone);
  }
  SECTION("sxn: delivered, with a notice") {
    debugged d;
    REQUIRE_FALSE(d.run("sxn usr1").error);
    auto end = d.run("g");
    CHECK(trailer(end) == "[target exited]");
    CHECK(end.text.find("Signal SIGUSR1 (10) User defined signal 1") != std::string::npos);
    CHECK(end.text.find("delivered to the program") != std::string::npos);
    CHECK(end.text.find("(first chance)") == std::string::npos);
    CHECK(d.server.wait_for_output("done\n"));
    CHECK(d.server.program_output() == alone);
  }
  SECTION("sxd: no first-chance stop") {
    debugged d;
    REQUIRE_FALSE(d.run("sxd 10").error);
    auto end = d.run("g");
    CHECK(trailer(end) == "[target exited]");
    CHECK(d.server.wait_for_output("done\n"));
    CHECK(d.server.program_output() == alone);
  }
  SECTION("sxe: SIGALRM and SIGCHLD stop too, and g delivers each") {
    debugged d;
    REQUIRE_FALSE(d.run("sxe SIGALRM SIGCHLD").error);
    CHECK(d.run("sx").text.find("SIGALRM (14)    - Alarm clock - break - not handled") != std::string::npos);
    const std::string seen = run_to_exit(d);
    const auto usr1 = seen.find("Signal SIGUSR1 (10)");
    const auto alrm = seen.find("Signal SIGALRM (14) Alarm clock - code SI_KERNEL");
    const auto chld = seen.find("Signal SIGCHLD (17) Child status changed - code CLD_EXITED");
    CHECK(usr1 != std::string::npos);
    CHECK(alrm > usr1);
    CHECK(chld > alrm);
    CHECK(alrm != std::string::npos);
    CHECK(chld != std::string::npos);
    CHECK(seen.find("exit status 7") != std::string::npos);
    CHECK(d.server.wait_for_output("done\n"));
    CHECK(d.server.program_output() == alone);
  }
  SECTION("bad filters say what is wrong") {
    debugged d;
    auto bad = d.run("sxe SIGNOPE");
    CHECK(bad.error);
    CHECK(bad.text.find("'SIGNOPE' is not a signal") != std::string::npos);
    CHECK(bad.text.find("Usage: sx{e|d|n|i}") != std::string::npos);
    CHECK(d.run("sxn -h usr1").error);
  }
}

TEST_CASE("gh after a SIGUSR1 stop keeps the handler from running; gn delivers", "[signals]") {
  SECTION("gh") {
    debugged d;
    REQUIRE(d.run("g").text.find("Signal SIGUSR1") != std::string::npos);
    auto end = d.run("gh");
    CHECK(trailer(end) == "[target exited]");
    CHECK(d.server.wait_for_output("done\n"));
    CHECK(d.server.program_output().find("usr1: the handler did not run") != std::string::npos);
  }
  SECTION("sxe -h makes g drop it; gn still delivers") {
    debugged d;
    REQUIRE_FALSE(d.run("sxe -h SIGUSR1").error);
    auto stop = d.run("g");
    CHECK(stop.text.find("`g` or `gh` resumes without SIGUSR1") != std::string::npos);
    REQUIRE_FALSE(d.run("gn").error);
    CHECK(d.server.wait_for_output("done\n"));
    CHECK(d.server.program_output().find("usr1: signo=10") != std::string::npos);
  }
}

TEST_CASE("a SIGSEGV stop shows the faulting address, and g ends the program as it would alone", "[signals]") {
  const auto [alone, status] = run_alone("segv");
  REQUIRE(WIFSIGNALED(status));
  debugged d({"segv"});
  auto fault = d.run("g");
  CHECK(fault.text.find("Signal SIGSEGV (11) Segmentation fault - code SEGV_MAPERR (address not mapped), "
                        "address 00000000`00000010") != std::string::npos);
  CHECK(trailer(fault).find(kExe + "!crash") != std::string::npos);
  auto end = d.run("g", "json");
  CHECK(end.text.find("The target exited: terminated by signal SIGSEGV (" + std::to_string(WTERMSIG(status)) + ")") !=
        std::string::npos);
  auto doc = toolhost::sdk::parse_json(end.structured);
  REQUIRE(doc);
  CHECK((*doc)["target"]["exited"].GetBool());
  CHECK((*doc)["target"]["exit"]["signal"].GetInt() == WTERMSIG(status));
  CHECK(d.server.program_output() == alone);
}

TEST_CASE("the default filters are gdb's table", "[signals]") {
  // gdb -batch -ex 'info signals': "SIGALRM  No  No  Yes  Alarm clock".
  FILE* p = popen("gdb -nx -batch -ex 'info signals' 2>/dev/null", "r");
  REQUIRE(p != nullptr);
  std::string table;
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), p)) table.append(buffer.data(), n);
  pclose(p);
  std::map<std::string, std::array<bool, 3>> gdb;
  const std::regex row(R"((SIG\w+)\s+(Yes|No)\s+(Yes|No)\s+(Yes|No)\s)");
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it) {
    gdb[(*it)[1]] = {(*it)[2] == "Yes", (*it)[3] == "Yes", (*it)[4] == "Yes"};
  }
  REQUIRE(gdb.size() > 40);

  debugged d;
  auto listed = d.run("sx", "json");
  auto doc = toolhost::sdk::parse_json(listed.structured);
  REQUIRE(doc);
  int compared = 0;
  for (const auto& s : (*doc)["result"]["signals"].GetArray()) {
    const std::string name = s["name"].GetString();
    auto it = gdb.find(name);
    if (it == gdb.end()) continue;  // SIGSTKFLT: gdb has no such signal
    const auto [stop, print, pass] = it->second;
    const std::string expected = stop ? "break" : print ? "output" : "ignore";
    INFO(name);
    CHECK(s["break"].GetString() == expected);
    CHECK(s["handled"].GetBool() == !pass);
    ++compared;
  }
  CHECK(compared >= 60);
}

TEST_CASE("a core of the fault shows the signal and says a core cannot deliver it", "[signals]") {
  // gdb runs the program to its SIGSEGV and writes a core there (with the NT_SIGINFO note).
  const std::string core = "/tmp/toolhost-signals-core-" + std::to_string(getpid());
  const std::string command =
      "gdb -nx -batch -ex run -ex 'gcore " + core + "' --args " + SIGNALS_PROGRAM + " segv >/dev/null 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  debugger_tools tools(
      [](const std::string& name) { return name == "dump" ? &toolhost::dump_backend::factory() : nullptr; },
      toolhost::debugger::launch_settings{});
  auto opened = unpack(tools.open("dump", core, ""));
  std::remove(core.c_str());
  INFO(opened.text);
  REQUIRE_FALSE(opened.error);
  CHECK(opened.text.find("Signal SIGSEGV (11) Segmentation fault - code SEGV_MAPERR (address not mapped), address "
                         "00000000`00000010") != std::string::npos);
  CHECK(opened.text.find("it cannot resume or deliver SIGSEGV") != std::string::npos);
  auto go = unpack(tools.command("g", 1000, "text", [] { return false; }));
  CHECK(go.error);
  CHECK(go.text.find("cannot run the target (it is a snapshot) and cannot deliver SIGSEGV to it") != std::string::npos);
}
