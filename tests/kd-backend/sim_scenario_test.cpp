// The kd backend through the debug-target interface against tests/kd-sim: what the debugger
// plugin does with it (open, registers, memory, breakpoints, run control, output, close), on a
// clean wire and on one that drops and corrupts packets, plus reboots and bugchecks.
#include <catch2/catch.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <unistd.h>
#include <vector>

#include <toolhost/debug_target.h>
#include <toolhost/sdk/writer.hpp>

#include "sim_process.h"
#include "sim_session.h"

namespace {

using toolhost::sdk::string_writer;
using namespace kdtest;

// The acceptance scenario; returns what a person would compare between two runs.
std::vector<std::string> scenario(kdtest::sim_process& sim, const char* options) {
  std::vector<std::string> results;
  session s(sim.socket_path(), options);
  toolhost_debug_target_t* t = s.t;

  // open: the target was running; attaching broke in.
  const toolhost_dt_stop_t first = s.wait();
  CHECK(first.reason == TOOLHOST_DT_STOP_INTERRUPT);
  CHECK(sim.control("state").rfind("halted", 0) == 0);
  string_writer described;
  t->describe(t, described.raw());
  CHECK(described.text().find("\"kernel_base\":\"0xfffff80000000000\"") != std::string::npos);
  CHECK(described.text().find("\"dtb\":\"0x1000\"") != std::string::npos);

  // r: registers agree with the simulator's own view.
  CHECK(hex(s.reg("rip")) == sim.control("reg 0 rip"));
  CHECK(hex(s.reg("rsp")) == sim.control("reg 0 rsp"));
  CHECK(s.reg("cr3") == 0x1000);
  results.push_back("cs=" + hex(s.reg("cs")));

  // Virtual and physical reads.
  auto mz = s.read(TOOLHOST_DT_VIRTUAL, kKernelBase, 4);
  CHECK(hex_bytes(mz) == sim.control("peek fffff80000000000 4"));
  results.push_back("mz=" + hex_bytes(mz));
  REQUIRE(sim.control("requests reset") == "ok");
  auto big = s.read(TOOLHOST_DT_VIRTUAL, kKernelBase + 0x1000, 9000);  // several packets
  REQUIRE(big.size() == 9000);
  // Round trips: 9000 bytes take at least ceil(9000 / 3944) reads of a 4000-byte KD packet.
  INFO(sim.control("requests"));
  CHECK(sim.control("requests") == "total=3 ReadVirtualMemory=3");
  CHECK(hex_bytes(std::vector<uint8_t>(big.begin(), big.begin() + 16)) == sim.control("peek fffff80000001000 16"));
  auto phys = s.read(TOOLHOST_DT_PHYSICAL, 0x100000, 4);  // the kernel's first page
  CHECK(phys == mz);
  toolhost_status_t status = TOOLHOST_OK;
  auto none = s.read(TOOLHOST_DT_VIRTUAL, kKernelBase + 0x400000, 16, &status);
  CHECK(status == TOOLHOST_ERR_NOT_FOUND);
  auto edge = s.read(TOOLHOST_DT_VIRTUAL, kKernelBase + 0x3FFFF0, 64, &status);
  CHECK(status == TOOLHOST_OK);
  CHECK(edge.size() == 16);  // a prefix: the rest is unmapped
  results.push_back("edge=" + std::to_string(edge.size()));

  // Virtual and physical writes land where the simulator sees them.
  string_writer error;
  const uint8_t pattern[] = {0xDE, 0xAD, 0xBE, 0xEF, 0x01, 0x02};
  REQUIRE(t->write_memory(t, TOOLHOST_DT_VIRTUAL, kKernelBase + 0x5000, pattern, sizeof(pattern), error.raw()) ==
          TOOLHOST_OK);
  CHECK(sim.control("peek fffff80000005000 6") == "deadbeef0102");
  CHECK(sim.control("peekphys 105000 6") == "deadbeef0102");
  REQUIRE(t->write_memory(t, TOOLHOST_DT_PHYSICAL, 0x106000, pattern, 2, error.raw()) == TOOLHOST_OK);
  CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, kKernelBase + 0x6000, 2)) == "dead");
  CHECK(t->write_memory(t, TOOLHOST_DT_VIRTUAL, kKernelBase + 0x400000, pattern, 2, error.raw()) ==
        TOOLHOST_ERR_NOT_FOUND);

  // bp then g stops at the breakpoint; the target holds it in its table.
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  CHECK(sim.control("breakpoints") == "1 0xfffff80000001100");
  s.resume(TOOLHOST_DT_CONTINUE);
  toolhost_dt_stop_t hit = s.wait();
  CHECK(hit.reason == TOOLHOST_DT_STOP_BREAKPOINT);
  CHECK(hit.pc == kSayHello);
  CHECK(s.reg("rip") == kSayHello);
  results.push_back("bp pc=" + hex(hit.pc));
  // g again: the backend steps off the breakpoint, the loop prints and comes back to it.
  s.resume(TOOLHOST_DT_CONTINUE);
  hit = s.wait();
  CHECK(hit.reason == TOOLHOST_DT_STOP_BREAKPOINT);
  CHECK(hit.pc == kSayHello);
  const std::string out = s.output();
  CHECK(out.find("Hello from kd-sim\n") != std::string::npos);
  results.push_back("dbgprint=" + std::string(out.find("Hello from kd-sim") != std::string::npos ? "yes" : "no"));

  // t: one instruction (inc rax, 3 bytes); the breakpoint is stepped over, not hit again.
  s.resume(TOOLHOST_DT_STEP);
  toolhost_dt_stop_t step = s.wait();
  CHECK(step.reason == TOOLHOST_DT_STOP_STEP);
  CHECK(step.pc == kSayHello + 3);
  results.push_back("step pc=" + hex(step.pc));
  s.resume(TOOLHOST_DT_STEP);  // mov eax, 1
  step = s.wait();
  CHECK(step.pc == kSayHello + 8);
  CHECK((s.reg("rax") & 0xFFFFFFFF) == 1);

  // Register writes go through SetContextEx and are seen by the target.
  const int rbx = s.reg_index("rbx");
  const uint64_t value = 0x1234567890ull;
  REQUIRE(t->write_register(t, -1, static_cast<uint32_t>(rbx), &value, 8, error.raw()) == TOOLHOST_OK);
  CHECK(sim.control("reg 0 rbx") == "0x1234567890");
  CHECK(s.reg("rbx") == value);

  // break while running stops it.
  REQUIRE(t->clear_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  CHECK(sim.control("breakpoints") == "0");
  s.resume(TOOLHOST_DT_CONTINUE);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(t->is_running(t));
  CHECK(sim.control("state") == "running");
  toolhost_dt_stop_t dummy{};
  CHECK(t->wait_stop(t, 0, &dummy, error.raw()) == TOOLHOST_ERR_TIMEOUT);
  REQUIRE(t->interrupt(t, error.raw()) == TOOLHOST_OK);
  const toolhost_dt_stop_t broke = s.wait();
  CHECK(broke.reason == TOOLHOST_DT_STOP_INTERRUPT);
  CHECK(!t->is_running(t));
  results.push_back("break=" + std::to_string(broke.reason));

  // KD extensions: MSRs, processors, control space.
  CHECK(s.ext("rdmsr", R"({"msr":"0xc0000082"})").find("\"value\":\"0xfffff80000001400\"") != std::string::npos);
  s.ext("wrmsr", R"({"msr":"0xc0000082","value":"0xfffff80000009000"})");
  CHECK(s.ext("rdmsr", R"({"msr":"0xc0000082"})").find("\"value\":\"0xfffff80000009000\"") != std::string::npos);
  string_writer bad;
  CHECK(t->extension(t, "rdmsr", R"({"msr":"0x12345"})", bad.raw()) == TOOLHOST_ERR_NOT_FOUND);
  CHECK(s.ext("control_space", "{}").find("\"cr3\":\"0x1000\"") != std::string::npos);
  s.ext("switch_processor", R"({"processor":1})");
  string_writer threads;
  t->list_threads(t, threads.raw());
  CHECK(threads.text() ==
        R"([{"id":0,"name":"processor 0","current":false},{"id":1,"name":"processor 1","current":true}])");
  const uint64_t rip1 = s.reg("rip");
  CHECK(rip1 >= kKernelBase + 0x1200);
  CHECK(rip1 < kKernelBase + 0x1204);
  REQUIRE(t->select_thread(t, 0, error.raw()) == TOOLHOST_OK);
  CHECK(hex(s.reg("rip")) == sim.control("reg 0 rip"));
  string_writer unknown;
  CHECK(t->extension(t, "frobnicate", "{}", unknown.raw()) == TOOLHOST_ERR_UNSUPPORTED);

  // close restores every breakpoint and lets the target run.
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, kKernelBase + 0x1010, 1, error.raw()) == TOOLHOST_OK);
  CHECK(sim.control("breakpoints").rfind("2 ", 0) == 0);
  CHECK(sim.control("peek fffff80000001100 1") == "cc");
  s.close();
  CHECK(sim.control("breakpoints") == "0");
  CHECK(sim.control("peek fffff80000001100 1") == "48");
  CHECK(sim.control("peek fffff80000001010 1") == "e8");
  CHECK(sim.control("state") == "running");
  return results;
}

}  // namespace

TEST_CASE("kd backend against the simulator: the acceptance scenario on a clean wire") {
  kdtest::sim_process sim;
  const auto clean = scenario(sim, nullptr);
  CHECK(clean.size() == 7);
  // A second session attaches to the running target again.
  session again(sim.socket_path());
  CHECK(again.wait().reason == TOOLHOST_DT_STOP_INTERRUPT);
}

TEST_CASE("kd backend: the same scenario with 10% of packets dropped and 5% corrupted gives the same results") {
  std::vector<std::string> clean;
  {
    kdtest::sim_process sim;
    clean = scenario(sim, nullptr);
  }
  kdtest::sim_process lossy({"--drop", "0.10", "--corrupt", "0.05", "--seed", seed("7")});
  const auto faulty = scenario(lossy, R"({"ack_timeout_ms":150})");
  CHECK(faulty == clean);
  const std::string stats = lossy.control("stats");
  INFO(stats);
  CHECK(stats.find(" dropped=0 ") == std::string::npos);
  CHECK(stats.find(" corrupted=0 ") == std::string::npos);
}

TEST_CASE("kd backend: a reboot while running is reported and the session goes on") {
  kdtest::sim_process sim;
  session s(sim.socket_path());
  s.wait();
  string_writer error;
  REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  REQUIRE(s.t->clear_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  s.resume(TOOLHOST_DT_CONTINUE);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(sim.control("reboot") == "ok");
  const toolhost_dt_stop_t stop = s.wait();
  CHECK(stop.reason == TOOLHOST_DT_STOP_REBOOT);
  CHECK(std::string(stop.description).find("rebooted") != std::string::npos);
  string_writer modules;
  s.t->list_modules(s.t, modules.raw());
  CHECK(modules.text().find("ntoskrnl.exe") != std::string::npos);
  // The session recovers: memory reads, breakpoints and run control work on the new boot.
  CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, kKernelBase, 2)) == "4d5a");
  REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  s.resume(TOOLHOST_DT_CONTINUE);
  const toolhost_dt_stop_t hit = s.wait();
  CHECK(hit.reason == TOOLHOST_DT_STOP_BREAKPOINT);
  CHECK(hit.pc == kSayHello);
  s.close();
  CHECK(sim.control("breakpoints") == "0");
}

namespace {

// The simulator's count of DbgPrints that a data packet from the debugger superseded.
std::string prints_superseded(const std::string& stats) {
  const size_t at = stats.find("prints_superseded=");
  return at == std::string::npos ? "" : stats.substr(at, stats.find(' ', at) - at);
}

}  // namespace

TEST_CASE("kd backend: .reboot and .crash through the extension hook, on a lossy wire") {
  kdtest::sim_process sim({"--drop", "0.10", "--corrupt", "0.05", "--seed", seed("3")});
  session s(sim.socket_path(), R"({"ack_timeout_ms":150})");
  s.wait();
  s.ext("reboot", "{}");
  CHECK(s.t->is_running(s.t));
  toolhost_dt_stop_t stop = s.wait();
  CHECK(stop.reason == TOOLHOST_DT_STOP_REBOOT);
  const std::string before = prints_superseded(sim.control("stats"));
  s.ext("bugcheck", "{}");
  stop = s.wait();
  CHECK(stop.reason == TOOLHOST_DT_STOP_BUGCHECK);
  CHECK(stop.code == 0xE2);
  // The message arrives unless kddll took our resent request as its ACK (then nobody can see it).
  if (prints_superseded(sim.control("stats")) == before) {
    CHECK(s.output().find("*** Fatal System Error: 0x000000e2") != std::string::npos);
  }
  string_writer described;
  s.t->describe(s.t, described.raw());
  CHECK(described.text().find(R"("bugcheck":{"code":"0xe2","parameters":["0x0","0x0","0x0","0x0"]})") !=
        std::string::npos);
  // Continuing a bugchecked machine reboots it.
  s.resume(TOOLHOST_DT_CONTINUE);
  stop = s.wait();
  CHECK(stop.reason == TOOLHOST_DT_STOP_REBOOT);
  s.close();
  CHECK(sim.control("state") == "running");
}

TEST_CASE("kd backend: open explains what is wrong") {
  string_writer error;
  auto* t = toolhost::kd_backend::kdcom_factory().open(&toolhost::kd_backend::kdcom_factory(), "/nonexistent/kd.sock",
                                                       nullptr, nullptr, 200, error.raw());
  CHECK(t == nullptr);
  CHECK(error.text().find("-chardev socket") != std::string::npos);
  string_writer bad_tcp;
  CHECK(toolhost::kd_backend::kdcom_factory().open(&toolhost::kd_backend::kdcom_factory(), "tcp:localhost", nullptr,
                                                   nullptr, 200, bad_tcp.raw()) == nullptr);
  CHECK(bad_tcp.text().find("tcp:HOST:PORT") != std::string::npos);
  kdtest::sim_process sim;
  string_writer bad_options;
  CHECK(toolhost::kd_backend::kdcom_factory().open(&toolhost::kd_backend::kdcom_factory(), sim.socket_path().c_str(),
                                                   nullptr, R"({"retries":-1})", 200, bad_options.raw()) == nullptr);
  CHECK(bad_options.text().find("\"retries\"") != std::string::npos);
}

TEST_CASE("kd backend: the scenario survives delayed and reordered packets") {
  kdtest::sim_process sim({"--delay", "0.05", "--delay-ms", "400", "--reorder", "0.05", "--seed", seed("5")});
  const auto results = scenario(sim, R"({"ack_timeout_ms":150})");
  CHECK(results.size() == 7);
  const std::string stats = sim.control("stats");
  INFO(stats);
  CHECK(stats.find(" delayed=0 ") == std::string::npos);
  CHECK(stats.find(" reordered=0 ") == std::string::npos);
}

namespace {
// A short session over any connect form: open, read, bp, g, DbgPrint, close.
void short_session(kdtest::sim_process& sim) {
  session s(sim.socket_path());
  CHECK(s.wait().reason == TOOLHOST_DT_STOP_INTERRUPT);
  CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, kKernelBase, 2)) == "4d5a");
  string_writer error;
  REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  s.resume(TOOLHOST_DT_CONTINUE);
  CHECK(s.wait().pc == kSayHello);
  s.resume(TOOLHOST_DT_CONTINUE);
  CHECK(s.wait().pc == kSayHello);
  CHECK(s.output().find("Hello from kd-sim") != std::string::npos);
  s.close();
  CHECK(sim.control("breakpoints") == "0");
}
}  // namespace

TEST_CASE("kd backend: a serial device (a pseudo-terminal) and tcp:HOST:PORT") {
  {
    kdtest::sim_process sim({}, "pty");
    INFO(sim.socket_path());
    CHECK(sim.socket_path().rfind("/dev/", 0) == 0);
    short_session(sim);
    short_session(sim);  // the line stays; a second session attaches again
  }
  // A port from the dynamic range; the simulator refuses to start if it is taken, so try a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int port = 20000 + static_cast<int>((::getpid() * 7 + attempt * 131) % 20000);
    std::unique_ptr<kdtest::sim_process> sim;
    try {
      sim = std::make_unique<kdtest::sim_process>(std::vector<std::string>{}, "tcp:" + std::to_string(port));
    } catch (const std::exception&) {
      continue;
    }
    CHECK(sim->socket_path() == "tcp:127.0.0.1:" + std::to_string(port));
    short_session(*sim);
    return;
  }
  FAIL("no free TCP port for kd-sim");
}

TEST_CASE("kd backend: hardware breakpoints and watchpoints through the debug registers of every processor") {
  kdtest::sim_process sim;
  session s(sim.socket_path());
  s.wait();
  toolhost_debug_target_t* t = s.t;
  CHECK((t->capabilities(t) & TOOLHOST_DT_CAP_HW_BREAKPOINTS) != 0);
  string_writer error;

  // An execution breakpoint lives in DR0 on both processors, not in the breakpoint table.
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_HARDWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  CHECK(sim.control("breakpoints") == "0");
  CHECK(sim.control("reg 0 dr0") == "0xfffff80000001100");
  CHECK(sim.control("reg 1 dr0") == "0xfffff80000001100");
  CHECK((std::stoull(sim.control("reg 1 dr7"), nullptr, 16) & 3) != 0);
  s.resume(TOOLHOST_DT_CONTINUE);
  toolhost_dt_stop_t stop = s.wait();
  CHECK(stop.reason == TOOLHOST_DT_STOP_BREAKPOINT);
  CHECK(stop.pc == kSayHello);
  // Continuing steps off it first; the loop comes back to it.
  s.resume(TOOLHOST_DT_CONTINUE);
  stop = s.wait();
  CHECK(stop.reason == TOOLHOST_DT_STOP_BREAKPOINT);
  CHECK(stop.pc == kSayHello);
  CHECK(s.output().find("Hello from kd-sim") != std::string::npos);
  REQUIRE(t->clear_breakpoint(t, TOOLHOST_DT_BP_HARDWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  CHECK((std::stoull(sim.control("reg 0 dr7"), nullptr, 16) & 0xFF) == 0);

  // A write watchpoint on the stack slot the loop's `call` pushes its return address into: we
  // are stopped inside the called function, so that slot is where rsp points now.
  const uint64_t slot = std::stoull(sim.control("reg 0 rsp"), nullptr, 16);
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_WRITE, slot, 8, error.raw()) == TOOLHOST_OK);
  s.resume(TOOLHOST_DT_CONTINUE);
  stop = s.wait();
  CHECK(stop.reason == TOOLHOST_DT_STOP_WATCHPOINT);
  CHECK(stop.address == slot);
  CHECK(stop.pc == kSayHello);  // trap after the call
  REQUIRE(t->clear_breakpoint(t, TOOLHOST_DT_BP_WRITE, slot, 8, error.raw()) == TOOLHOST_OK);

  // A read watchpoint (an access watch on x86) on the message DbgPrint reads.
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_READ, kKernelBase + 0x2000, 4, error.raw()) == TOOLHOST_OK);
  s.resume(TOOLHOST_DT_CONTINUE);
  stop = s.wait();
  CHECK(stop.reason == TOOLHOST_DT_STOP_WATCHPOINT);
  CHECK(stop.address == kKernelBase + 0x2000);

  // Bad requests are refused with a reason; a fifth slot does not exist.
  string_writer misaligned;
  CHECK(t->set_breakpoint(t, TOOLHOST_DT_BP_WRITE, slot + 1, 8, misaligned.raw()) == TOOLHOST_ERR_INVALID_ARGUMENT);
  CHECK(misaligned.text().find("aligned") != std::string::npos);
  string_writer odd;
  CHECK(t->set_breakpoint(t, TOOLHOST_DT_BP_WRITE, slot, 3, odd.raw()) == TOOLHOST_ERR_INVALID_ARGUMENT);
  for (uint64_t i = 0; i < 3; ++i) {
    REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_HARDWARE, kKernelBase + 0x1200 + i, 1, error.raw()) == TOOLHOST_OK);
  }
  string_writer full;
  CHECK(t->set_breakpoint(t, TOOLHOST_DT_BP_HARDWARE, kKernelBase + 0x1300, 1, full.raw()) != TOOLHOST_OK);
  CHECK(full.text().find("DR0-DR3") != std::string::npos);

  // close clears the debug registers on every processor.
  s.close();
  CHECK((std::stoull(sim.control("reg 0 dr7"), nullptr, 16) & 0xFF) == 0);
  CHECK((std::stoull(sim.control("reg 1 dr7"), nullptr, 16) & 0xFF) == 0);
  CHECK(sim.control("reg 1 dr0") == "0x0");
}

// Not a test: `kd_backend_tests "[.bench]"` prints throughput and latency numbers for the
// report. Nothing is asserted about time.
TEST_CASE("kd backend: numbers on the simulator", "[.bench]") {
  for (const bool lossy : {false, true}) {
    std::vector<std::string> faults;
    if (lossy) faults = {"--drop", "0.10", "--corrupt", "0.05", "--seed", "1"};
    kdtest::sim_process sim(faults);
    const auto t0 = std::chrono::steady_clock::now();
    session s(sim.socket_path(), lossy ? R"({"ack_timeout_ms":150})" : nullptr);
    s.wait();
    const auto t1 = std::chrono::steady_clock::now();
    constexpr int kSmall = 200;
    for (int i = 0; i < kSmall; ++i) REQUIRE(s.read(TOOLHOST_DT_VIRTUAL, kKernelBase + 0x1000 + i, 8).size() == 8);
    const auto t2 = std::chrono::steady_clock::now();
    const auto big = s.read(TOOLHOST_DT_VIRTUAL, kKernelBase, 1 << 20);
    REQUIRE(big.size() == (1u << 20));
    const auto t3 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) s.reg("rip");
    const auto t4 = std::chrono::steady_clock::now();
    using ms = std::chrono::duration<double, std::milli>;
    std::printf(
        "%s: attach %.1f ms; 8-byte read %.3f ms; 1 MiB read %.1f ms (%.1f MiB/s); register read (GetContext + control "
        "space) %.3f ms\n",
        lossy ? "10% drop + 5% corrupt" : "clean wire", ms(t1 - t0).count(), ms(t2 - t1).count() / kSmall,
        ms(t3 - t2).count(), 1000.0 / ms(t3 - t2).count(), ms(t4 - t3).count() / 20);
    std::printf("  simulator: %s\n", sim.control("stats").c_str());
  }
}

TEST_CASE("kd backend: driver loads while running are acknowledged, listed, and do not stop the target") {
  kdtest::sim_process sim;
  session s(sim.socket_path());
  s.wait();
  string_writer error;
  REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  s.resume(TOOLHOST_DT_CONTINUE);
  CHECK(s.wait().pc == kSayHello);
  REQUIRE(s.t->clear_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  s.resume(TOOLHOST_DT_CONTINUE);
  CHECK(sim.control("load \\SystemRoot\\system32\\drivers\\first.sys") == "ok");
  CHECK(sim.control("load \\SystemRoot\\system32\\drivers\\second.sys") == "ok");
  // The pump notes both loads and continues past them (bounded wait; list_modules is safe
  // while the target runs).
  std::string listed;
  for (int i = 0; i < 50 && listed.find("second.sys") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    string_writer now;
    s.t->list_modules(s.t, now.raw());
    listed = now.text();
  }
  CHECK(listed.find("second.sys") != std::string::npos);
  CHECK(s.t->is_running(s.t));
  std::string state;
  for (int i = 0; i < 50 && state != "running"; ++i) {
    state = sim.control("state");
    if (state != "running") std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(state == "running");
  REQUIRE(s.t->interrupt(s.t, error.raw()) == TOOLHOST_OK);
  CHECK(s.wait().reason == TOOLHOST_DT_STOP_INTERRUPT);
  string_writer modules;
  s.t->list_modules(s.t, modules.raw());
  CHECK(modules.text().find(R"("name":"first.sys")") != std::string::npos);
  CHECK(
      modules.text().find(
          R"("name":"second.sys","path":"\\SystemRoot\\system32\\drivers\\second.sys","base":"0xfffff80001010000","size":"0x10000")") !=
      std::string::npos);
}

TEST_CASE("kd backend: a reboot while halted surfaces at the next request and as a reboot stop") {
  kdtest::sim_process sim;
  session s(sim.socket_path());
  s.wait();
  string_writer error;
  REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
  CHECK(sim.control("reboot") == "ok");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<uint8_t> buf(2);
  size_t done = 0;
  string_writer failed;
  CHECK(s.t->read_memory(s.t, TOOLHOST_DT_VIRTUAL, kKernelBase, buf.data(), 2, &done, failed.raw()) != TOOLHOST_OK);
  CHECK(failed.text().find("rebooted") != std::string::npos);
  const toolhost_dt_stop_t stop = s.wait(0);
  CHECK(stop.reason == TOOLHOST_DT_STOP_REBOOT);
  // The new boot's table is empty; our breakpoint is written again when the target resumes.
  CHECK(sim.control("breakpoints") == "0");
  CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, kKernelBase, 2)) == "4d5a");
  s.resume(TOOLHOST_DT_CONTINUE);
  const toolhost_dt_stop_t hit = s.wait();
  CHECK(hit.reason == TOOLHOST_DT_STOP_BREAKPOINT);
  CHECK(hit.pc == kSayHello);
  s.close();
  CHECK(sim.control("breakpoints") == "0");
}
