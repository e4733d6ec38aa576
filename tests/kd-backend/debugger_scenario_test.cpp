// The acceptance scenario through the debugger plugin's tools (what `command`, `open` and
// `close` do for an MCP client), with the kd backend against tests/kd-sim.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#include <toolhost/sdk/json.hpp>

#include "kdcom_factory.h"
#include "sim_process.h"
#include "tools.hpp"

using toolhost::debugger::debugger_tools;

namespace {

struct answer {
  std::string text;
  bool error = false;
};

answer unpack(const toolhost::sdk::result& r) {
  auto doc = toolhost::sdk::parse_json(r.to_json());
  answer a;
  REQUIRE(doc);
  for (const auto& block : (*doc)["content"].GetArray()) a.text += block["text"].GetString();
  a.error = r.is_error();
  return a;
}

answer run(debugger_tools& tools, const std::string& line, int64_t timeout_ms = 10000) {
  auto a = unpack(tools.command(line, timeout_ms, "text", [] { return false; }));
  UNSCOPED_INFO("> " << line << "\n" << a.text);
  return a;
}

bool has(const answer& a, const std::string& what) { return a.text.find(what) != std::string::npos; }

// Runs the scenario and returns the lines a person would compare between runs.
std::vector<std::string> scenario(kdtest::sim_process& sim) {
  std::vector<std::string> seen;
  debugger_tools tools(
      [](const std::string& name) { return name == "kd" ? &toolhost::kd_backend::kdcom_factory() : nullptr; },
      toolhost::debugger::launch_settings{});
  auto opened = unpack(tools.open("kd", sim.socket_path(), ""));
  INFO(opened.text);
  REQUIRE_FALSE(opened.error);

  auto regs = run(tools, "r");
  REQUIRE_FALSE(regs.error);
  CHECK(has(regs, "rip"));
  CHECK(has(regs, "rsp"));

  auto mz = run(tools, "db fffff80000000000 L4");
  REQUIRE_FALSE(mz.error);
  CHECK(has(mz, "4d 5a 90 00"));
  seen.push_back("db ok");

  // Physical memory: the kernel's first page sits at 0x100000; what eb writes shows there too.
  auto phys = run(tools, "!db 100000 L4");
  REQUIRE_FALSE(phys.error);
  CHECK(has(phys, "4d 5a 90 00"));

  REQUIRE_FALSE(run(tools, "eb fffff80000005000 ca fe").error);
  CHECK(has(run(tools, "!db 105000 L2"), "ca fe"));
  CHECK(sim.control("peek fffff80000005000 2") == "cafe");
  CHECK(has(run(tools, "db fffff80000005000 L2"), "ca fe"));

  REQUIRE_FALSE(run(tools, "bp fffff80000001100").error);
  CHECK(sim.control("breakpoints") == "1 0xfffff80000001100");
  auto hit = run(tools, "g");
  REQUIRE_FALSE(hit.error);
  CHECK(has(hit, "Breakpoint 0 hit"));
  CHECK(sim.control("reg 0 rip") == "0xfffff80000001100");
  seen.push_back("bp hit");

  auto again = run(tools, "g");
  CHECK(has(again, "Breakpoint 0 hit"));
  CHECK(has(again, "[dbgprint] Hello from kd-sim"));
  seen.push_back("dbgprint");

  auto t = run(tools, "t");
  REQUIRE_FALSE(t.error);
  CHECK(sim.control("reg 0 rip") == "0xfffff80000001103");
  auto p = run(tools, "p");
  REQUIRE_FALSE(p.error);
  CHECK(sim.control("reg 0 rip") == "0xfffff80000001108");
  seen.push_back("steps");

  REQUIRE_FALSE(run(tools, "bc *").error);
  CHECK(sim.control("breakpoints") == "0");
  auto running = run(tools, "g", 500);
  CHECK(has(running, "[target running]"));
  CHECK(sim.control("state") == "running");
  auto stopped = run(tools, "break");
  REQUIRE_FALSE(stopped.error);
  CHECK(sim.control("state").rfind("halted", 0) == 0);
  seen.push_back("break");

  REQUIRE_FALSE(run(tools, "bp fffff80000001100").error);
  REQUIRE_FALSE(run(tools, "bp fffff80000001010").error);
  CHECK(sim.control("breakpoints").rfind("2 ", 0) == 0);
  auto closed = unpack(tools.close());
  CHECK_FALSE(closed.error);
  CHECK(sim.control("breakpoints") == "0");
  CHECK(sim.control("peek fffff80000001100 1") == "48");
  CHECK(sim.control("state") == "running");
  return seen;
}

}  // namespace

TEST_CASE("kd through the debugger: open, r, db/eb, bp and g, t and p, break, DbgPrint, close", "[kd][debugger]") {
  kdtest::sim_process sim;
  CHECK(scenario(sim).size() == 5);
}

TEST_CASE("kd through the debugger: the same on a wire that drops 10% and corrupts 5%", "[kd][debugger]") {
  kdtest::sim_process clean_sim;
  const auto clean = scenario(clean_sim);
  kdtest::sim_process lossy({"--drop", "0.10", "--corrupt", "0.05", "--seed", "9"});
  CHECK(scenario(lossy) == clean);
}

TEST_CASE("kd through the debugger: a stop reported instead of a reply is rendered after the command",
          "[kd][debugger]") {
  kdtest::sim_process sim;
  debugger_tools tools(
      [](const std::string& name) { return name == "kd" ? &toolhost::kd_backend::kdcom_factory() : nullptr; },
      toolhost::debugger::launch_settings{});
  REQUIRE_FALSE(unpack(tools.open("kd", sim.socket_path(), "")).error);
  // Processor 1 enters DbgBreakPointWithStatus while `r` asks processor 0 for its registers.
  REQUIRE(sim.control("inject cpu 1") == "ok");
  auto r = run(tools, "r; g");
  CHECK(has(r, "Break instruction exception - code 80000003"));
  CHECK(has(r, "int3"));
  CHECK(has(r, "[target halted @ 1 fffff800`00001300"));
  // g on the same line waits for the stop to be seen.
  CHECK(r.error);
  CHECK(has(r, "'g' was not run"));
  // Re-issued, g runs both processors on past their int3s; break stops the target again.
  CHECK(has(run(tools, "g", 300), "[target running]"));
  CHECK(sim.control("state") == "running");
  CHECK_FALSE(run(tools, "break").error);
  // The same report again changes nothing: db answers, no stop is shown.
  REQUIRE(sim.control("inject same") == "ok");
  auto db = run(tools, "db fffff80000000000 L2");
  CHECK_FALSE(db.error);
  CHECK(has(db, "4d 5a"));
  CHECK_FALSE(has(db, "Break instruction exception"));
  // A breakpoint set while a new stop overtakes the request is set once and is hit.
  REQUIRE(sim.control("inject cpu 1") == "ok");
  auto bp = run(tools, "bp fffff80000001100");
  CHECK_FALSE(bp.error);
  CHECK(sim.control("breakpoints") == "1 0xfffff80000001100");
  CHECK(has(bp, "[target halted @ 1 fffff800`00001300"));
  auto hit = run(tools, "g");
  CHECK(has(hit, "Breakpoint 0 hit"));
  CHECK(sim.control("reg 0 rip") == "0xfffff80000001100");
  CHECK(sim.control("state").rfind("halted", 0) == 0);
}
