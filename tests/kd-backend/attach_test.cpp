// Attaching to a KD target whatever it is doing at that moment, and state changes in the middle
// of a session (issue 25), and resuming from a hard-coded int3 (issue 15 item 11), against
// tests/kd-sim: at its initial break, running and printing, or halted at a breakpoint and
// sending its state change again and again; on a clean wire and on one that loses 10% and
// corrupts 5% of what the target sends.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "sim_process.h"
#include "sim_session.h"
#include "unix_listener.h"

namespace {

using toolhost::sdk::string_writer;
using namespace kdtest;
using namespace std::chrono_literals;

struct start_case {
  const char* start;  // kd-sim --start
  toolhost_dt_stop_reason_t reason;
  uint64_t pc;
};

// What open reports first: the initial break and a stale breakpoint are the target's own stops
// (exceptions, rip at the int3 / the breakpoint); a running target is broken into.
const start_case kStarts[] = {
    {"initial-break", TOOLHOST_DT_STOP_EXCEPTION, kBreakWithStatus},
    {"running", TOOLHOST_DT_STOP_INTERRUPT, kBreakWithStatus},
    {"breakpoint", TOOLHOST_DT_STOP_EXCEPTION, kSayHello},
};

// Retransmission timeouts of 60 ms on both sides and a shorter wait before breaking in keep the
// many lossy runs short (the clean runs use the defaults); the protocol is the same at any
// timeout.
std::vector<std::string> lossy(int run) {
  return {"--drop",           "0.10", "--corrupt", "0.05",
          "--ack-timeout-ms", "60",   "--seed",    seed(std::to_string(101 + run).c_str())};
}

std::vector<std::string> args_for(const start_case& c, bool faulty, int run) {
  std::vector<std::string> a = {"--start", c.start};
  if (faulty) {
    const auto more = lossy(run);
    a.insert(a.end(), more.begin(), more.end());
  }
  return a;
}

const char* options_for(bool faulty) { return faulty ? R"({"ack_timeout_ms":60,"attach_wait_ms":300})" : nullptr; }

// 20 attaches in a row, each issued as soon as the simulator listens.
void attach_twenty(const start_case& c, bool faulty) {
  for (int run = 0; run < 20; ++run) {
    INFO(c.start << (faulty ? " lossy" : " clean") << ", attach " << run);
    kdtest::sim_process sim(args_for(c, faulty, run));
    session s(sim.socket_path(), options_for(faulty));
    const toolhost_dt_stop_t first = s.wait(0);
    CHECK(first.reason == c.reason);
    CHECK(first.pc == c.pc);
    CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, kKernelBase, 2)) == "4d5a");
    s.close();
    // close let the target run on, past the int3 it was reported at.
    CHECK(sim.control("state") == "running");
  }
}

}  // namespace

TEST_CASE("kd attach: 20 times in a row at the target's initial break", "[attach]") {
  attach_twenty(kStarts[0], false);
  attach_twenty(kStarts[0], true);
}

TEST_CASE("kd attach: 20 times in a row while the target runs and prints", "[attach]") {
  attach_twenty(kStarts[1], false);
  attach_twenty(kStarts[1], true);
}

TEST_CASE("kd attach: 20 times in a row while the target is halted at a breakpoint and repeats its report",
          "[attach]") {
  attach_twenty(kStarts[2], false);
  attach_twenty(kStarts[2], true);
}

TEST_CASE("kd: g right after open runs past the int3 the target stopped at, DbgPrint arrives, bp x then g reaches x",
          "[int3]") {
  for (const start_case& c : kStarts) {
    for (const bool faulty : {false, true}) {
      INFO(c.start << (faulty ? " lossy" : " clean"));
      kdtest::sim_process sim(args_for(c, faulty, 0));
      session s(sim.socket_path(), options_for(faulty));
      const toolhost_dt_stop_t first = s.wait(0);
      CHECK(first.pc == c.pc);
      CHECK(s.reg("rip") == c.pc);
      // g proceeds: the loop prints again and the target keeps running.
      s.resume(TOOLHOST_DT_CONTINUE);
      std::string printed;
      for (int i = 0; i < 100 && printed.find("Hello from kd-sim") == std::string::npos; ++i) {
        std::this_thread::sleep_for(50ms);
        printed += s.output();
      }
      CHECK(printed.find("Hello from kd-sim\n") != std::string::npos);
      CHECK(s.t->is_running(s.t));
      // break stops it in DbgBreakPointWithStatus again; bp x; g reaches x.
      string_writer error;
      REQUIRE(s.t->interrupt(s.t, error.raw()) == TOOLHOST_OK);
      const toolhost_dt_stop_t broke = s.wait();
      CHECK(broke.reason == TOOLHOST_DT_STOP_INTERRUPT);
      CHECK(broke.pc == kBreakWithStatus);
      REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
      s.resume(TOOLHOST_DT_CONTINUE);
      const toolhost_dt_stop_t hit = s.wait();
      CHECK(hit.reason == TOOLHOST_DT_STOP_BREAKPOINT);
      CHECK(hit.pc == kSayHello);
    }
  }
}

TEST_CASE("kd: t at a hard-coded int3 steps past it, and our breakpoint on one is stepped and hit again", "[int3]") {
  kdtest::sim_process sim({"--start", "initial-break"});
  session s(sim.socket_path());
  CHECK(s.wait(0).pc == kBreakWithStatus);
  // t: the int3 was the instruction; the step ends on the ret after it, without running.
  s.resume(TOOLHOST_DT_STEP);
  const toolhost_dt_stop_t step = s.wait();
  CHECK(step.reason == TOOLHOST_DT_STOP_STEP);
  CHECK(step.pc == kBreakWithStatus + 1);
  CHECK(sim.control("reg 0 rip") == hex(kBreakWithStatus + 1));
  s.resume(TOOLHOST_DT_STEP);  // the ret, back into the loop
  CHECK(s.wait().pc == kKernelBase + 0x1000);
  // A breakpoint of ours on DbgBreakPointWithStatus: each break-in hits it, and g goes on.
  string_writer error;
  REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kBreakWithStatus, 1, error.raw()) == TOOLHOST_OK);
  for (int round = 0; round < 2; ++round) {
    s.resume(TOOLHOST_DT_CONTINUE);
    std::this_thread::sleep_for(100ms);
    CHECK(sim.control("state") == "running");
    REQUIRE(s.t->interrupt(s.t, error.raw()) == TOOLHOST_OK);
    const toolhost_dt_stop_t hit = s.wait();
    CHECK(hit.reason == TOOLHOST_DT_STOP_BREAKPOINT);
    CHECK(hit.pc == kBreakWithStatus);
  }
  s.close();
  CHECK(sim.control("breakpoints") == "0");
  CHECK(sim.control("peek fffff80000001300 1") == "cc");
  CHECK(sim.control("state") == "running");
}

namespace {

// `inject` on the simulator, then one of r, db, bp: it must succeed, and the stop (if new) is
// the next one reported.
void injected_commands(bool faulty) {
  kdtest::sim_process sim(faulty ? lossy(7) : std::vector<std::string>{});
  session s(sim.socket_path(), options_for(faulty));
  CHECK(s.wait(0).reason == TOOLHOST_DT_STOP_INTERRUPT);
  string_writer error;
  toolhost_dt_stop_t none{};
  for (const std::string command : {"r", "db", "bp"}) {
    INFO(command << (faulty ? " lossy" : " clean"));
    // The same report again (a target whose wait loop started over): nothing new to report.
    REQUIRE(sim.control("inject same") == "ok");
    if (command == "r") CHECK(hex(s.reg("rip")) == sim.control("reg 0 rip"));
    if (command == "db") CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, kKernelBase + 0x2000, 5)) == "48656c6c6f");
    if (command == "bp") {
      REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
      CHECK(sim.control("breakpoints") == "1 0xfffff80000001100");
      REQUIRE(s.t->clear_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
    }
    CHECK(s.t->wait_stop(s.t, 0, &none, error.raw()) == TOOLHOST_ERR_TIMEOUT);

    // A new stop: processor 1 enters DbgBreakPointWithStatus instead of the reply.
    REQUIRE(sim.control("inject cpu 1") == "ok");
    if (command == "r") CHECK(s.reg("rip", 0) == kBreakWithStatus);
    if (command == "db") CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, kKernelBase + 0x2000, 5)) == "48656c6c6f");
    if (command == "bp") {
      REQUIRE(s.t->set_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
      CHECK(sim.control("breakpoints") == "1 0xfffff80000001100");  // once, though it was asked twice
    }
    const toolhost_dt_stop_t stop = s.wait(0);
    CHECK(stop.thread == 1);
    CHECK(stop.pc == kBreakWithStatus);
    CHECK(hex(s.reg("rip")) == sim.control("reg 1 rip"));
    CHECK(s.t->wait_stop(s.t, 0, &none, error.raw()) == TOOLHOST_ERR_TIMEOUT);
    // Both processors go on past their int3s: with a breakpoint on the DbgPrint caller, g
    // reaches it; without one, the target runs until broken into.
    s.resume(TOOLHOST_DT_CONTINUE);
    if (command == "bp") {
      CHECK(s.wait().pc == kSayHello);
      REQUIRE(s.t->clear_breakpoint(s.t, TOOLHOST_DT_BP_SOFTWARE, kSayHello, 1, error.raw()) == TOOLHOST_OK);
    } else {
      std::this_thread::sleep_for(100ms);
      CHECK(sim.control("state") == "running");
      REQUIRE(s.t->interrupt(s.t, error.raw()) == TOOLHOST_OK);
      CHECK(s.wait().reason == TOOLHOST_DT_STOP_INTERRUPT);
    }
    REQUIRE(s.t->select_thread(s.t, 0, error.raw()) == TOOLHOST_OK);
    (void)s.t->wait_stop(s.t, 0, &none, error.raw());  // the switch's report is no news
  }
  const std::string stats = sim.control("stats");
  INFO(stats);
  CHECK(stats.find(" injected=6") != std::string::npos);
  s.close();
  CHECK(sim.control("state") == "running");
}

}  // namespace

TEST_CASE(
    "kd: a state change between a request and its reply (r, db, bp): the command succeeds and a new stop is reported",
    "[overtake]") {
  injected_commands(false);
  injected_commands(true);
}

namespace {

std::string open_error(const std::string& connect, uint32_t timeout_ms) {
  string_writer error;
  auto* t = toolhost::kd_backend::kdcom_factory().open(&toolhost::kd_backend::kdcom_factory(), connect.c_str(), nullptr,
                                                       nullptr, timeout_ms, error.raw());
  if (t != nullptr) t->close(t);
  CHECK(t == nullptr);
  return error.text();
}

}  // namespace

TEST_CASE("kd attach that cannot proceed says why in one sentence, with the wait it used", "[attach]") {
  // Nothing listening.
  const std::string nobody = open_error("/tmp/kd-nobody-" + std::to_string(::getpid()) + ".sock", 300);
  CHECK(nobody.find("Nothing was listening on the KD socket") != std::string::npos);
  CHECK(nobody.find(" s: ") != std::string::npos);
  // Something listens but sends nothing.
  {
    kdtest::unix_listener quiet;  // accepts, and never says a word: a line with nothing on it
    const std::string silent = open_error(quiet.path(), 1500);
    INFO(silent);
    CHECK(silent.rfind("No KD packet came from kdcom unix:" + quiet.path() + " in ", 0) == 0);
    CHECK(silent.find("break-ins") != std::string::npos);
  }
  // A kernel that prints but never polls for the break-in byte.
  {
    kdtest::sim_process deaf({"--no-break-in"});
    std::this_thread::sleep_for(200ms);
    const std::string busy = open_error(deaf.socket_path(), 2500);
    INFO(busy);
    CHECK(busy.find(" packets (") != std::string::npos);
    CHECK(busy.find("but did not stop (") != std::string::npos);
  }
  // A target that answers everything with RESET.
  {
    kdtest::sim_process storm({"--start", "initial-break", "--reset-storm"});
    const std::string reset = open_error(storm.socket_path(), 2500);
    INFO(reset);
    CHECK(reset.find("answered with RESET") != std::string::npos);
    CHECK(reset.find("never settled") != std::string::npos);
  }
}
