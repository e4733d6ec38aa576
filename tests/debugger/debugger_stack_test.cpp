// Stacks of Linux programs as gdb shows them (issue 20): the stack program built -O0 and -O2
// against Debian's libc, stopped at breakpoints in the program, at the entry of libc's read,
// inside clock_nanosleep (after its syscall), and in a signal handler. `gdb -batch` at the same
// stop is the oracle: `bt` for the frames, their order, their function names and their source
// lines, `info line` for the line of each frame's address, on a live gdbserver target and on the
// core gdb wrote at that stop.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <toolhost/sdk/json.hpp>

#include "gdb_oracle.hpp"
#include "gdbserver_process.hpp"
#include "stack_tools.hpp"
#include "tool_answer.hpp"

using toolhost::testing::base_name;
using toolhost::testing::frame_name;
using toolhost::testing::unpack;

namespace {

// gdb's frames at the stop; writes a core of that stop to `core`.
std::vector<frame_name> gdb_frames(const std::string& program, const std::string& stop, const std::string& core) {
  const std::string text =
      toolhost::testing::gdb_batch(program, {"set backtrace past-main on", "handle SIGUSR1 nostop noprint",
                                             "break main", "run", "break *" + stop, "continue", "bt", "gcore " + core});
  UNSCOPED_INFO("gdb:\n" << text);
  return toolhost::testing::parse_backtrace(text);
}

struct our_frame {
  frame_name name;
  uint64_t line_address = 0;  // the address whose line the frame shows (0: a call site's line)
};

std::vector<our_frame> toolhost_frames(toolhost::debugger::debugger_tools& tools) {
  auto k = unpack(tools.command("k", 20000, "json", [] { return false; }));
  UNSCOPED_INFO("k:\n" << k.text);
  auto doc = toolhost::sdk::parse_json(k.structured);
  REQUIRE(doc);
  std::vector<our_frame> frames;
  bool exact = true;          // the next physical frame's pc is exact (frame 0, after a signal)
  bool inner_inline = false;  // the frame before was an inline frame of the same physical frame
  for (const auto& f : (*doc)["result"]["frames"].GetArray()) {
    our_frame o;
    frame_name& n = o.name;
    n.function = f["function"].GetString();
    const bool trampoline = f["signal_trampoline"].GetBool();
    if (trampoline) n.function = "<signal handler called>";
    if (n.function.empty()) {
      std::string symbol = f["symbol"].GetString();
      symbol = symbol.substr(symbol.find('!') + 1);
      n.function = symbol.substr(0, symbol.find('+'));
    }
    if (f.HasMember("source") && !trampoline) {
      n.file = base_name(f["source"]["file"].GetString());
      n.line = f["source"]["line"].GetInt();
    }
    const uint64_t ip = std::stoull(f["ip"].GetString(), nullptr, 16);
    // The first frame of a physical frame shows the line of its pc (or the call, pc - 1); an
    // outer frame of an inline chain shows the call site's line.
    if (!inner_inline && !trampoline) o.line_address = exact ? ip : ip - 1;
    inner_inline = f["inline"].GetBool();
    if (!inner_inline) exact = trampoline;
    frames.push_back(o);
  }
  return frames;
}

std::vector<frame_name> names(const std::vector<our_frame>& frames) {
  std::vector<frame_name> out;
  for (const auto& f : frames) out.push_back(f.name);
  return out;
}

// Each frame's line against `info line *address` on the same core.
void compare_lines(toolhost::debugger::debugger_tools& tools, const std::vector<our_frame>& frames,
                   const std::string& program, const std::string& core) {
  std::vector<std::string> commands;
  std::vector<uint64_t> addresses;
  for (const auto& f : frames) {
    if (f.line_address == 0) continue;
    char expr[64];
    std::snprintf(expr, sizeof expr, "info line *0x%llx", static_cast<unsigned long long>(f.line_address));
    commands.push_back(expr);
    addresses.push_back(f.line_address);
  }
  const std::string text = toolhost::testing::gdb_batch(program, commands, core);
  const std::regex answer(R"re((?:^|\n)(Line (\d+) of "([^"]+)"|No line number information available))re");
  std::vector<frame_name> expected, ours;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), answer); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    expected.push_back(m[2].matched ? frame_name{"", base_name(m[3]), std::stoi(m[2])} : frame_name{});
  }
  for (uint64_t a : addresses) {
    char command[64];
    std::snprintf(command, sizeof command, "ln 0x%llx", static_cast<unsigned long long>(a));
    auto ln = unpack(tools.command(command, 20000, "json", [] { return false; }));
    auto doc = toolhost::sdk::parse_json(ln.structured);
    REQUIRE(doc);
    const auto& r = (*doc)["result"];
    if (r.IsObject() && r.HasMember("source")) {
      ours.push_back({"", base_name(r["source"]["file"].GetString()), r["source"]["line"].GetInt()});
    } else {
      ours.push_back({});
    }
  }
  INFO("gdb's info line:\n" << text);
  CHECK(ours == expected);
}

void compare_at(const std::string& program, const std::string& gdb_stop, const std::string& our_stop) {
  const std::string core = "/tmp/toolhost-stack-core-" + std::to_string(getpid());
  const auto expected = gdb_frames(program, gdb_stop, core);
  REQUIRE(expected.size() >= 5);
  const std::string exe = toolhost::debugger::module_name_of(program);
  {
    INFO("live, through gdbserver");
    toolhost::testing::gdbserver_process server(program);
    auto tools = toolhost::testing::make_stack_tools();
    REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
    auto at_main = unpack(tools->command("sxi usr1; bp " + exe + "!main; g", 20000, "text", [] { return false; }));
    REQUIRE(at_main.text.find("Breakpoint 0 hit") != std::string::npos);
    auto set = unpack(tools->command("bp " + our_stop + "; g", 20000, "text", [] { return false; }));
    INFO(set.text);
    REQUIRE(set.text.find("Breakpoint 1 hit") != std::string::npos);
    CHECK(names(toolhost_frames(*tools)) == expected);
  }
  {
    INFO("gdb's core of the same stop, through the dump backend");
    auto tools = toolhost::testing::make_stack_tools();
    auto opened = unpack(tools->open("dump", core, ""));
    REQUIRE_FALSE(opened.error);
    const auto frames = toolhost_frames(*tools);
    CHECK(names(frames) == expected);
    compare_lines(*tools, frames, program, core);
  }
  std::remove(core.c_str());
}

// The offset of the instruction after clock_nanosleep's first syscall: a stop there is inside
// the function, below its stack adjustment, where a walk that only follows rbp goes astray.
std::string after_syscall(const std::string& program) {
  const std::string text = toolhost::testing::gdb_batch(program, {"break main", "run", "x/40i clock_nanosleep"});
  std::istringstream lines(text);
  bool next = false;
  const std::regex offset(R"(<[^+>]+\+(\d+)>)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (next && std::regex_search(line, m, offset)) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%x", std::stoi(m[1]));
      return hex;
    }
    if (line.find("syscall") != std::string::npos) next = true;
  }
  FAIL("no syscall instruction in clock_nanosleep:\n" << text);
  return "";
}

}  // namespace

TEST_CASE("k equals gdb's bt at the program's breakpoints", "[stack]") {
  for (const char* program : {STACK_PROGRAM_O0, STACK_PROGRAM_O2}) {
    const std::string exe = toolhost::debugger::module_name_of(program);
    INFO(program);
    compare_at(program, "leaf", exe + "!leaf");
    compare_at(program, "recurse", exe + "!recurse");
  }
}

TEST_CASE("k equals gdb's bt inside libc's read and clock_nanosleep", "[stack]") {
  for (const char* program : {STACK_PROGRAM_O0, STACK_PROGRAM_O2}) {
    INFO(program);
    compare_at(program, "read", "libc!read");
    const std::string offset = after_syscall(program);
    compare_at(program, "clock_nanosleep+" + offset, "libc!clock_nanosleep+" + offset);
  }
}

TEST_CASE("k equals gdb's bt in a signal handler", "[stack]") {
  for (const char* program : {STACK_PROGRAM_O0, STACK_PROGRAM_O2}) {
    const std::string exe = toolhost::debugger::module_name_of(program);
    INFO(program);
    compare_at(program, "on_usr1", exe + "!on_usr1");
  }
}

TEST_CASE("a cycle or runaway in the unwind data ends with a bounded frame count", "[stack]") {
  toolhost::testing::gdbserver_process server(CFI_LOOPS_PROGRAM);
  auto tools = toolhost::testing::make_stack_tools();
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
  auto frame_count = [&](const std::string& k) {
    auto a = unpack(tools->command(k, 20000, "json", [] { return false; }));
    INFO(a.text);
    REQUIRE_FALSE(a.error);
    auto doc = toolhost::sdk::parse_json(a.structured);
    REQUIRE(doc);
    return (*doc)["result"]["frames"].Size();
  };
  // After runaway's first byte, so that a return address equal to the pc still lies inside it.
  const std::string exe = toolhost::debugger::module_name_of(CFI_LOOPS_PROGRAM);
  auto stop = unpack(
      tools->command("bp " + exe + "!runaway+1; bp " + exe + "!standstill+1; g", 20000, "text", [] { return false; }));
  REQUIRE(stop.text.find("Breakpoint 0 hit") != std::string::npos);
  // runaway's caller is always runaway, 16 bytes higher: the walk goes on until the count asked.
  INFO(stop.text);
  CHECK(frame_count("k") == 0x40);
  CHECK(frame_count("k 0x400") == 0x400);
  auto next = unpack(tools->command("g", 20000, "text", [] { return false; }));
  REQUIRE(next.text.find("Breakpoint 1 hit") != std::string::npos);
  // standstill's caller would have its stack pointer: the walk ends after the first frame.
  CHECK(frame_count("k") == 1);
}
