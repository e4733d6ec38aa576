// Stacks of Linux programs as gdb shows them (issue 20): the stack program built -O0 and -O2
// against Debian's libc, stopped in the program, inside read and clock_nanosleep, and in a
// signal handler. `gdb -batch -ex bt` at the same stop is the oracle for the frames, their order,
// their function names and their source lines, on a live gdbserver target and on gdb's core.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <toolhost/sdk/json.hpp>

#include "gdbserver_process.hpp"
#include "open_dump.hpp"
#include "target_adapter.hpp"
#include "tool_answer.hpp"
#include "tools.hpp"
// The gdb backend's adapter header has the same name.
#include "../../plugins/dump-backend/target_adapter.hpp"

using toolhost::debugger::debugger_tools;
using toolhost::testing::unpack;

namespace {

struct frame_name {
  std::string function;
  std::string file;  // base name
  int line = 0;
  bool operator==(const frame_name&) const = default;
};

std::ostream& operator<<(std::ostream& o, const frame_name& f) { return o << f.function << " " << f.file << ":" << f.line; }

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string capture(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), p)) out.append(buffer.data(), n);
  pclose(p);
  return out;
}

// gdb's frames at the first stop at `breakpoint`; writes a core of that stop to `core`.
std::vector<frame_name> gdb_frames(const std::string& program, const std::string& breakpoint, const std::string& core) {
  const std::string text = capture("gdb -nx -batch -ex 'set backtrace past-main on' -ex 'set breakpoint pending on' "
                                   "-ex 'handle SIGUSR1 nostop noprint' -ex 'break *" + breakpoint + "' -ex run -ex bt "
                                   "-ex 'gcore " + core + "' --args " + program + " 2>/dev/null");
  std::vector<frame_name> frames;
  const std::regex row(R"(^#\d+\s+(?:0x[0-9a-f]+ in )?(<signal handler called>|\S+)(?: \(.*\))?(?: at (\S+):(\d+))?)");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    frames.push_back({m[1], m[2].matched ? base_name(m[2]) : "", m[3].matched ? std::stoi(m[3]) : 0});
  }
  UNSCOPED_INFO("gdb:\n" << text);
  return frames;
}

std::vector<frame_name> toolhost_frames(debugger_tools& tools) {
  auto k = unpack(tools.command("k", 20000, "json", [] { return false; }));
  UNSCOPED_INFO("k:\n" << k.text);
  auto doc = toolhost::sdk::parse_json(k.structured);
  REQUIRE(doc);
  std::vector<frame_name> frames;
  for (const auto& f : (*doc)["result"]["frames"].GetArray()) {
    frame_name n;
    n.function = f["function"].GetString();
    if (f["signal_trampoline"].GetBool()) n.function = "<signal handler called>";
    if (n.function.empty()) {
      std::string symbol = f["symbol"].GetString();
      symbol = symbol.substr(symbol.find('!') + 1);
      n.function = symbol.substr(0, symbol.find('+'));
    }
    if (f.HasMember("source") && n.function != "<signal handler called>") {
      n.file = base_name(f["source"]["file"].GetString());
      n.line = f["source"]["line"].GetInt();
    }
    frames.push_back(n);
  }
  return frames;
}

const toolhost_debug_target_factory_t kDump = {
    sizeof(toolhost_debug_target_factory_t), TOOLHOST_DEBUG_TARGET_VERSION, "dump", "ELF cores", nullptr, "a path",
    [](const toolhost_debug_target_factory_t*, const char* connect, const char*, const char*, uint32_t,
       toolhost_writer_t* error) noexcept -> toolhost_debug_target_t* {
      const std::string path = connect;
      return toolhost::dump_backend::open_target(error, "The dump", [path] { return toolhost::dump_backend::open_dump(path); });
    }};

std::unique_ptr<debugger_tools> make_tools() {
  return std::make_unique<debugger_tools>(
      [](const std::string& name) -> const toolhost_debug_target_factory_t* {
        if (name == "gdb") return toolhost::gdb::factory();
        return name == "dump" ? &kDump : nullptr;
      },
      toolhost::debugger::launch_settings{});
}

void compare_at(const std::string& program, const std::string& gdb_breakpoint, const std::string& our_breakpoint) {
  const std::string core = "/tmp/toolhost-stack-core-" + std::to_string(getpid());
  const auto expected = gdb_frames(program, gdb_breakpoint, core);
  REQUIRE(expected.size() >= 5);
  {
    INFO("live, through gdbserver");
    toolhost::testing::gdbserver_process server(program);
    auto tools = make_tools();
    REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
    auto set = unpack(tools->command("sxi usr1; bp " + our_breakpoint + "; g", 20000, "text", [] { return false; }));
    INFO(set.text);
    REQUIRE(set.text.find("Breakpoint 0 hit") != std::string::npos);
    CHECK(toolhost_frames(*tools) == expected);
  }
  {
    INFO("gdb's core of the same stop, through the dump backend");
    auto tools = make_tools();
    auto opened = unpack(tools->open("dump", core, ""));
    std::remove(core.c_str());
    REQUIRE_FALSE(opened.error);
    CHECK(toolhost_frames(*tools) == expected);
  }
}

}  // namespace

TEST_CASE("k equals gdb's bt at the program's breakpoints", "[.][stack]") {
  for (const char* program : {STACK_PROGRAM_O0, STACK_PROGRAM_O2}) {
    const std::string exe = toolhost::debugger::module_name_of(program);
    INFO(program);
    compare_at(program, "leaf", exe + "!leaf");
    compare_at(program, "recurse", exe + "!recurse");
  }
}

TEST_CASE("k equals gdb's bt inside libc's read and clock_nanosleep", "[.][stack]") {
  for (const char* program : {STACK_PROGRAM_O0, STACK_PROGRAM_O2}) {
    INFO(program);
    compare_at(program, "read", "libc!read");
    compare_at(program, "clock_nanosleep", "libc!clock_nanosleep");
  }
}
