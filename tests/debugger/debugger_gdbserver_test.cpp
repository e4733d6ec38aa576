// The debugger's tools driving a real gdbserver through the gdb backend: the acceptance path
// (bp by symbol, g, k, dq/db, eb, p/t, gu, bl/bc, lm, [target running] and break) and the
// run-control rules (parked-stop refusal, halted-only wait, "break; bp; g", paging).
#include <catch2/catch.hpp>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include <toolhost/sdk/json.hpp>

#include "gdbserver_process.hpp"
#include "target_adapter.hpp"
#include "tool_answer.hpp"
#include "tools.hpp"

using toolhost::debugger::debugger_tools;
using toolhost::testing::answer;
using toolhost::testing::trailer;
using toolhost::testing::unpack;

namespace {

std::unique_ptr<debugger_tools> make_tools() {
  return std::make_unique<debugger_tools>(
      [](const std::string& name) { return name == "gdb" ? toolhost::gdb::factory() : nullptr; },
      toolhost::debugger::launch_settings{});
}

answer run(debugger_tools& tools, const std::string& line, int64_t timeout_ms = 10000,
           const std::string& format = "text") {
  auto a = unpack(tools.command(line, timeout_ms, format, [] { return false; }));
  UNSCOPED_INFO("> " << line << "\n" << a.text);
  return a;
}

const std::string kExe = "gdb_demo_program";

}  // namespace

TEST_CASE("debugging a C program under gdbserver", "[debugger][gdbserver]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM);
  auto tools = make_tools();
  auto opened = unpack(tools->open("gdb", server.address(), ""));
  INFO(opened.text);
  REQUIRE_FALSE(opened.error);
  CHECK(opened.structured.find(R"("status":"connected")") != std::string::npos);
  CHECK(unpack(tools->open("gdb", server.address(), "")).error);  // one session at a time

  REQUIRE_FALSE(run(*tools, "bp " + kExe + "!fill_message").error);
  auto hit = run(*tools, "g");
  REQUIRE_FALSE(hit.error);
  CHECK(hit.text.find("Breakpoint 0 hit") != std::string::npos);
  CHECK(trailer(hit).find("[target halted @ 0 ") == 0);
  CHECK(trailer(hit).find(" " + kExe + "!fill_message | process " + kExe + " (") != std::string::npos);

  auto stack = run(*tools, "k");
  REQUIRE_FALSE(stack.error);
  const auto fill = stack.text.find(kExe + "!fill_message");
  const auto main_frame = stack.text.find(kExe + "!main+");
  const auto libc_frame = stack.text.find("libc!");
  CHECK(fill != std::string::npos);
  CHECK(main_frame > fill);
  CHECK(libc_frame != std::string::npos);
  CHECK(libc_frame > main_frame);

  auto up = run(*tools, "gu");
  REQUIRE_FALSE(up.error);
  CHECK(trailer(up).find(kExe + "!main+") != std::string::npos);

  // What fill_message wrote.
  auto q = run(*tools, "dq " + kExe + "!marker L1");
  REQUIRE_FALSE(q.error);
  CHECK(q.text.find("11223344`55667788") != std::string::npos);
  auto b = run(*tools, "db " + kExe + "!message L10");
  REQUIRE_FALSE(b.error);
  CHECK(b.text.find("68 65 6c 6c 6f 2c 20 77-6f 72 6c 64 00") != std::string::npos);
  CHECK(b.text.find("hello, world") != std::string::npos);

  // p steps over the call to step_target; t goes into it.
  const std::string before = trailer(run(*tools, "r rip"));
  auto over = run(*tools, "p");
  REQUIRE_FALSE(over.error);
  CHECK(trailer(over) != before);
  bool entered = false;
  for (int i = 0; i < 20 && !entered; ++i) {
    auto in = run(*tools, "t");
    REQUIRE_FALSE(in.error);
    entered = trailer(in).find(kExe + "!step_target") != std::string::npos;
  }
  CHECK(entered);
  auto back = run(*tools, "gu");
  CHECK(trailer(back).find(kExe + "!main+") != std::string::npos);

  // Breakpoint list management.
  REQUIRE_FALSE(run(*tools, "bp " + kExe + "!report").error);
  auto list = run(*tools, "bl");
  CHECK(list.text.find(" 0 e ") != std::string::npos);
  CHECK(list.text.find(" 1 e ") != std::string::npos);
  CHECK(list.text.find(kExe + "!report") != std::string::npos);
  REQUIRE_FALSE(run(*tools, "bc 0").error);
  list = run(*tools, "bl");
  CHECK(list.text.find(" 0 e ") == std::string::npos);
  CHECK(list.text.find(" 1 e ") != std::string::npos);

  auto at_report = run(*tools, "g");
  CHECK(at_report.text.find("Breakpoint 1 hit") != std::string::npos);
  auto modules = run(*tools, "lm");
  CHECK(modules.text.find(kExe) != std::string::npos);
  CHECK(modules.text.find("libc ") != std::string::npos);
  // The module's file is among lm v's facts (the last column of lm names the symbol file).
  auto libc = run(*tools, "lm v m libc");
  CHECK(libc.text.find("libc.so.6") != std::string::npos);

  // JSON results carry typed values.
  auto regs = run(*tools, "r", 10000, "json");
  auto doc = toolhost::sdk::parse_json(regs.structured);
  REQUIRE(doc);
  CHECK((*doc)["ok"].GetBool());
  CHECK((*doc)["result"]["registers"].HasMember("rip"));
  CHECK_FALSE((*doc)["target"]["running"].GetBool());
  CHECK(std::string((*doc)["target"]["symbol"].GetString()) == kExe + "!report");

  // A byte the program prints next.
  REQUIRE_FALSE(run(*tools, "eb " + kExe + "!message 4a").error);
  auto done = run(*tools, "g");
  CHECK(trailer(done) == "[target exited]");
  CHECK(server.wait_for_output("message=Jello, world"));
  CHECK(unpack(tools->close()).structured == R"({"status":"closed"})");
}

TEST_CASE("g on a program that never stops, then break", "[debugger][gdbserver]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM, {"spin"});
  auto tools = make_tools();
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
  auto going = run(*tools, "g", 300);
  CHECK_FALSE(going.error);
  CHECK(trailer(going) == "[target running]");
  auto halted_only = run(*tools, "k", 100);
  CHECK(halted_only.error);
  CHECK(halted_only.text.find("use `break` first") != std::string::npos);
  auto stopped = run(*tools, "break");
  CHECK_FALSE(stopped.error);
  CHECK(stopped.text.find("Break-in") != std::string::npos);
  CHECK(trailer(stopped).find("[target halted @ ") == 0);

  // "break; bp X; g" on one line: each command is admitted on the state at its point.
  REQUIRE(run(*tools, "g", 100).text.find("[target running]") != std::string::npos);
  auto one_line = run(*tools, "break; bp @rip; g");
  CHECK_FALSE(one_line.error);
  CHECK(one_line.text.find("Breakpoint 0 hit") != std::string::npos);
  CHECK(trailer(one_line).find(kExe + "!spin") != std::string::npos);

  // A data breakpoint on the counter the loop increments.
  REQUIRE_FALSE(run(*tools, "bc *; ba w8 " + kExe + "!counter").error);
  auto watch = run(*tools, "g");
  CHECK(watch.text.find("Breakpoint 0 hit") != std::string::npos);
}

TEST_CASE("run-control rules: parked stops, halted-only waits, empty lines", "[debugger][gdbserver]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM, {"slow"});
  auto tools = make_tools();
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
  REQUIRE_FALSE(run(*tools, "bp " + kExe + "!report").error);

  SECTION("a stop between calls is shown first and a resuming command is refused once") {
    REQUIRE(trailer(run(*tools, "g", 50)) == "[target running]");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    auto refused = run(*tools, "g");
    CHECK(refused.error);
    CHECK(refused.text.find("Breakpoint 0 hit") == 0);
    CHECK(refused.text.find("'g' was not run") != std::string::npos);
    CHECK(trailer(refused).find(kExe + "!report") != std::string::npos);
    auto again = run(*tools, "g");
    CHECK_FALSE(again.error);
    CHECK(trailer(again) == "[target exited]");
  }
  SECTION("a halted-only command waits for the stop, renders it, then runs") {
    REQUIRE(trailer(run(*tools, "g", 50)) == "[target running]");
    auto stack = run(*tools, "k", 10000);
    CHECK_FALSE(stack.error);
    const auto banner = stack.text.find("Breakpoint 0 hit");
    const auto frames = stack.text.find("Child-SP");
    CHECK(banner != std::string::npos);
    CHECK(frames > banner);
  }
  SECTION("a halted-only command that times out says it was not run") {
    REQUIRE(trailer(run(*tools, "g", 50)) == "[target running]");
    auto not_run = run(*tools, "k", 50);
    CHECK(not_run.error);
    CHECK(not_run.text.find("'k' was not run") != std::string::npos);
    CHECK(trailer(not_run) == "[target running]");
  }
  SECTION("a hit that does not count is resumed between calls, so the target is never left frozen") {
    REQUIRE(run(*tools, "bp " + kExe + "!report if rax == 12345").text.find("redefined") != std::string::npos);
    REQUIRE(trailer(run(*tools, "g", 50)) == "[target running]");
    // Nobody calls while the program reaches report(); it still prints and exits.
    CHECK(server.wait_for_output("message=hello, world", 10000));
    auto next = run(*tools, "");
    CHECK(next.text.find("The target exited") == 0);
    CHECK(trailer(next) == "[target exited]");
  }
  SECTION("an empty line only waits") {
    REQUIRE(trailer(run(*tools, "g", 50)) == "[target running]");
    auto waited = run(*tools, "", 10000);
    CHECK_FALSE(waited.error);
    CHECK(waited.text.find("Breakpoint 0 hit") != std::string::npos);
  }
}

TEST_CASE("long output is paged and read back by offset and filter", "[debugger][gdbserver]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM);
  auto tools = make_tools();
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
  REQUIRE_FALSE(run(*tools, "bp " + kExe + "!report; g").error);
  auto big = run(*tools, "db libc L4000");
  REQUIRE_FALSE(big.error);
  std::smatch m;
  const std::regex footer(
      R"(\[output (\d+): (\d+) lines, offsets 0-(\d+) shown; the output tool reads on from offset (\d+), or with a filter finds lines in it\])");
  REQUIRE(std::regex_search(big.text, m, footer));
  const int id = std::stoi(m[1]);
  const int lines = std::stoi(m[2]);
  const int last = std::stoi(m[3]);
  CHECK(lines == 0x400);
  CHECK(std::stoi(m[4]) == last + 1);
  CHECK(trailer(big).find("[target halted") == 0);
  auto next = unpack(tools->output(id, last + 1, 2, ""));
  CHECK(next.text.find(std::to_string(last + 1) + ": ") == 0);
  auto filtered = unpack(tools->output(id, 0, 0, ".elf"));
  CHECK(filtered.text.find("0: ") == 0);
  CHECK(filtered.text.find("7f 45 4c 46") != std::string::npos);
  CHECK(unpack(tools->output(id + 100, 0, 0, "")).error);
}

TEST_CASE("bad input gets a clear error and the usage", "[debugger][gdbserver]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM);
  auto tools = make_tools();
  auto none = unpack(tools->command("k", 1000, "text", [] { return false; }));
  CHECK(none.error);
  CHECK(none.text.find("Ask the user") != std::string::npos);
  CHECK(unpack(tools->open("kd", "", "")).text.find("not loaded") != std::string::npos);
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
  auto unknown = run(*tools, "frobnicate 1");
  CHECK(unknown.error);
  CHECK(unknown.text.find("Unknown command 'frobnicate'") != std::string::npos);
  auto bad = run(*tools, "db nosuch!symbol");
  CHECK(bad.error);
  CHECK(bad.text.find("Usage: d{b|w|d|q|p|c|a|u}") != std::string::npos);
  auto ba = run(*tools, "ba x4 1000");
  CHECK(ba.error);
  CHECK(ba.text.find("Usage: ba") != std::string::npos);
  auto stops_line = run(*tools, "bp nosuch!x; g");
  CHECK(stops_line.error);
  CHECK(trailer(stops_line).find("[target halted") == 0);  // the failing bp ended the line
  auto msr = run(*tools, "rdmsr c0000082");
  CHECK(msr.error);
  CHECK(msr.text.find("the gdb backend does not offer 'rdmsr'") != std::string::npos);
  auto help = run(*tools, ".help bp");
  CHECK(help.text.find("Usage: bp [/1]") != std::string::npos);
  auto evaluated = run(*tools, "? 0n10 + 1", 1000, "json");
  CHECK(evaluated.text.find("Evaluate expression: 11 = 00000000`0000000b") != std::string::npos);
  CHECK(evaluated.structured.find(R"("result":{"value":"0xb")") != std::string::npos);
}

TEST_CASE("memory, disassembly, symbol, register and breakpoint-option commands", "[debugger][gdbserver]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM);
  auto tools = make_tools();
  REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);

  // A condition that is false is passed over; a one-shot breakpoint goes away when hit.
  REQUIRE_FALSE(run(*tools, "bp " + kExe + "!step_target if rdi == 6").error);
  REQUIRE_FALSE(run(*tools, "bp /1 " + kExe + "!report").error);
  auto hit = run(*tools, "g");
  CHECK(hit.text.find("Breakpoint 1 hit") != std::string::npos);
  auto list = run(*tools, "bl");
  CHECK(list.text.find(" 1 e ") == std::string::npos);
  CHECK(list.text.find("if rdi == 6") != std::string::npos);
  // pa steps over printf's call until report returns to main.
  auto stepped = run(*tools, "pa poi(@rsp)");
  CHECK_FALSE(stepped.error);
  CHECK(trailer(stepped).find(kExe + "!main+") != std::string::npos);
  CHECK(stepped.text.find("call ") != std::string::npos);

  auto u = run(*tools, "u " + kExe + "!main L3");
  // The function's header carries its source line (the demo is built with -g).
  CHECK(u.text.find(kExe + "!main [") != std::string::npos);
  CHECK(u.text.find("demo.c @ ") != std::string::npos);
  CHECK(u.text.find("push rbp") != std::string::npos);
  auto uf = run(*tools, "uf " + kExe + "!step_target");
  CHECK(uf.text.find("ret") != std::string::npos);
  CHECK(uf.text.find(kExe + "!step_target [") != std::string::npos);
  auto ub = run(*tools, "ub " + kExe + "!main+8 L2");
  CHECK_FALSE(ub.error);
  CHECK(ub.text.find(kExe + "!main") != std::string::npos);
  auto calls = run(*tools, "uf " + kExe + "!main");
  CHECK(calls.text.find("call " + kExe + "!fill_message (") != std::string::npos);

  auto ln = run(*tools, "ln " + kExe + "!report+1");
  CHECK(ln.text.find(kExe + "!report+0x1") != std::string::npos);
  auto x = run(*tools, "x " + kExe + "!*message*");
  CHECK(x.text.find(kExe + "!fill_message") != std::string::npos);
  CHECK(x.text.find(kExe + "!message") != std::string::npos);

  auto s = run(*tools, "s -a " + kExe + "!message L10 \"world\"");
  CHECK(s.text.find("77 6f 72 6c 64") != std::string::npos);
  auto s_none = run(*tools, "s -b " + kExe + "!message L10 99 98");
  CHECK(s_none.text.find("No match") != std::string::npos);

  CHECK(run(*tools, "uf " + kExe + "!report").text.find("; " + kExe + "!message") != std::string::npos);
  REQUIRE_FALSE(run(*tools, "bd 0").error);
  CHECK(run(*tools, "bl").text.find(" 0 d ") != std::string::npos);
  REQUIRE_FALSE(run(*tools, "be 0").error);
  CHECK(run(*tools, "bl").text.find(" 0 e ") != std::string::npos);
  CHECK(run(*tools, "dw " + kExe + "!message L2").text.find("6568 6c6c") != std::string::npos);
  CHECK(run(*tools, "dc " + kExe + "!message L1").text.find("6c6c6568  hell") != std::string::npos);
  CHECK(run(*tools, "dp " + kExe + "!message L1").text.find("77202c6f`6c6c6568") != std::string::npos);
  REQUIRE_FALSE(run(*tools, "ed " + kExe + "!marker 0n42").error);
  CHECK(run(*tools, "dd " + kExe + "!marker L1").text.find("0000002a") != std::string::npos);
  CHECK(run(*tools, "da " + kExe + "!message").text.find("\"hello, world\"") != std::string::npos);
  CHECK(run(*tools, "? poi(" + kExe + "!marker) & ffff").text.find("Evaluate expression: 42 =") != std::string::npos);

  REQUIRE_FALSE(run(*tools, "r rax=1234").error);
  CHECK(run(*tools, "r rax").text.find("rax=0000000000001234") != std::string::npos);
  auto threads = run(*tools, "~");
  CHECK(threads.text.find(".0  Id: ") == 0);
  CHECK(run(*tools, "~5s").error);
  CHECK(run(*tools, "help").text.find("bp, ") == std::string::npos);
  CHECK(run(*tools, "help").text.find("  bp ") != std::string::npos);
}
