// Attaching over KDNET whatever the target is doing (issue 25) and resuming from a hard-coded
// int3 (issue 15 item 11), through debug_target.h against tests/kdnet-sim: at its initial break,
// running and printing, or halted at a breakpoint and sending its report again and again; clean
// and losing 10% / corrupting 5% of the datagrams both ways. Then state changes that come instead
// of a reply in the middle of a session.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include <toolhost/debug_target.h>
#include <toolhost/sdk/writer.hpp>

#include "kdnet_factory.h"
#include "kdnet_sim.hpp"
#include "udp_port.hpp"

using namespace std::chrono_literals;
using sim_t = kdnet_sim::simulator;
using toolhost::sdk::string_writer;

namespace {

constexpr const char* kKey = "1.z.10.3w5e11264sgsf";

struct start_case {
  kdnet_sim::start_state start;
  const char* name;
  toolhost_dt_stop_reason_t reason;
  uint64_t pc;
};

const start_case kStarts[] = {
    {kdnet_sim::start_state::initial_break, "initial break", TOOLHOST_DT_STOP_EXCEPTION, sim_t::kBreakWithStatus},
    {kdnet_sim::start_state::running, "running", TOOLHOST_DT_STOP_INTERRUPT, sim_t::kBreakWithStatus},
    {kdnet_sim::start_state::breakpoint, "breakpoint", TOOLHOST_DT_STOP_EXCEPTION, sim_t::kIncRax},
};

// A simulator and a session opened as soon as it runs (it pokes the port we are about to bind).
struct attached {
  std::unique_ptr<sim_t> sim;
  toolhost_debug_target_t* t = nullptr;
  attached(kdnet_sim::start_state start, bool faulty, uint32_t seed) {
    const uint16_t port = free_port();
    kdnet_sim::options o;
    o.port = port;
    o.key = kKey;
    o.start = start;
    o.seed = seed;
    o.poke_interval_ms = 300;
    if (faulty) {
      // Short retransmission timeouts on both sides keep the many lossy runs quick (the clean
      // runs use the defaults); the protocol is the same at any timeout.
      o.drop = 0.10;
      o.corrupt = 0.05;
      o.retransmit_ms = 50;
    }
    sim = std::make_unique<sim_t>(o);
    std::string error;
    REQUIRE(sim->start(&error));
    const auto& f = toolhost::kdnet_backend::kdnet_factory();
    const std::string connect = "127.0.0.1:" + std::to_string(port);
    string_writer err;
    t = f.open(&f, connect.c_str(), kKey, faulty ? R"({"ack_timeout_ms":40})" : nullptr, 15000, err.raw());
    INFO(err.text());
    REQUIRE(t != nullptr);
  }
  ~attached() {
    if (t != nullptr) t->close(t);
  }
  void close() {
    t->close(t);
    t = nullptr;
  }
  toolhost_dt_stop_t wait(uint32_t ms = 10000) {
    toolhost_dt_stop_t stop{};
    stop.struct_size = sizeof(stop);
    string_writer err;
    const toolhost_status_t s = t->wait_stop(t, ms, &stop, err.raw());
    INFO(err.text());
    REQUIRE(s == TOOLHOST_OK);
    return stop;
  }
  bool no_stop() {
    toolhost_dt_stop_t stop{};
    stop.struct_size = sizeof(stop);
    return t->wait_stop(t, 0, &stop, nullptr) == TOOLHOST_ERR_TIMEOUT;
  }
  uint64_t rip(int64_t thread = -1) {
    std::vector<uint8_t> regs(4096);
    size_t done = 0;
    REQUIRE(t->read_registers(t, thread, regs.data(), regs.size(), &done, nullptr) == TOOLHOST_OK);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | regs[16 * 8 + i];  // rip is the 17th slot of the kd map
    return v;
  }
  std::vector<uint8_t> read(uint64_t address, size_t size) {
    std::vector<uint8_t> out(size);
    size_t done = 0;
    REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, address, out.data(), size, &done, nullptr) == TOOLHOST_OK);
    out.resize(done);
    return out;
  }
  void resume(toolhost_dt_resume_t how) { REQUIRE(t->resume(t, how, -1, nullptr) == TOOLHOST_OK); }
  std::string output() {
    string_writer out;
    t->read_output(t, out.raw());
    return out.text();
  }
};

bool eventually_running(sim_t& sim) {
  for (int i = 0; i < 50; ++i) {
    if (!sim.halted()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

void attach_twenty(const start_case& c, bool faulty) {
  for (uint32_t run = 0; run < 20; ++run) {
    INFO(c.name << (faulty ? " lossy" : " clean") << ", attach " << run);
    attached a(c.start, faulty, 300 + run);
    const toolhost_dt_stop_t first = a.wait(0);
    CHECK(first.reason == c.reason);
    CHECK(first.pc == c.pc);
    CHECK(a.read(sim_t::kKernelBase, 2) == std::vector<uint8_t>{'M', 'Z'});
    a.close();
    CHECK(eventually_running(*a.sim));  // past the int3 it was reported at
  }
}

}  // namespace

TEST_CASE("kdnet attach: 20 times in a row at the target's initial break") {
  attach_twenty(kStarts[0], false);
  attach_twenty(kStarts[0], true);
}

TEST_CASE("kdnet attach: 20 times in a row while the target runs and prints") {
  attach_twenty(kStarts[1], false);
  attach_twenty(kStarts[1], true);
}

TEST_CASE("kdnet attach: 20 times in a row while the target is halted at a breakpoint and repeats its report") {
  attach_twenty(kStarts[2], false);
  attach_twenty(kStarts[2], true);
}

TEST_CASE(
    "kdnet: g right after open runs past the int3 the target stopped at, DbgPrint arrives, bp x then g reaches x") {
  for (const start_case& c : kStarts) {
    for (const bool faulty : {false, true}) {
      INFO(c.name << (faulty ? " lossy" : " clean"));
      attached a(c.start, faulty, 41);
      CHECK(a.wait(0).pc == c.pc);
      CHECK(a.rip() == c.pc);
      a.resume(TOOLHOST_DT_CONTINUE);
      std::string printed;
      for (int i = 0; i < 100 && printed.find("kdnet-sim: tick") == std::string::npos; ++i) {
        std::this_thread::sleep_for(50ms);
        printed += a.output();
      }
      CHECK(printed.find("kdnet-sim: tick") != std::string::npos);
      CHECK(!a.sim->halted());
      REQUIRE(a.t->interrupt(a.t, nullptr) == TOOLHOST_OK);
      const toolhost_dt_stop_t broke = a.wait();
      CHECK(broke.reason == TOOLHOST_DT_STOP_INTERRUPT);
      CHECK(broke.pc == sim_t::kBreakWithStatus);
      REQUIRE(a.t->set_breakpoint(a.t, TOOLHOST_DT_BP_SOFTWARE, sim_t::kIncRax, 1, nullptr) == TOOLHOST_OK);
      a.resume(TOOLHOST_DT_CONTINUE);
      const toolhost_dt_stop_t hit = a.wait();
      CHECK(hit.reason == TOOLHOST_DT_STOP_BREAKPOINT);
      CHECK(hit.pc == sim_t::kIncRax);
    }
  }
}

TEST_CASE(
    "kdnet: a state change between a request and its reply (r, db, bp): the command succeeds and a new stop is "
    "reported") {
  for (const bool faulty : {false, true}) {
    attached a(kdnet_sim::start_state::running, faulty, 77);
    CHECK(a.wait(0).reason == TOOLHOST_DT_STOP_INTERRUPT);
    for (const std::string command : {"r", "db", "bp"}) {
      INFO(command << (faulty ? " lossy" : " clean"));
      // The same report again: the command is answered and there is nothing new to report.
      a.sim->inject(true);
      if (command == "r") CHECK(a.rip() == sim_t::kBreakWithStatus);
      if (command == "db") CHECK(a.read(sim_t::kDataArea + 1, 2) == std::vector<uint8_t>{10, 13});
      if (command == "bp") {
        REQUIRE(a.t->set_breakpoint(a.t, TOOLHOST_DT_BP_SOFTWARE, sim_t::kIncRax, 1, nullptr) == TOOLHOST_OK);
        CHECK(a.sim->breakpoints_in_table() == 1);
        REQUIRE(a.t->clear_breakpoint(a.t, TOOLHOST_DT_BP_SOFTWARE, sim_t::kIncRax, 1, nullptr) == TOOLHOST_OK);
      }
      CHECK(a.no_stop());
      // A new stop: processor 1 enters DbgBreakPointWithStatus instead of the reply.
      a.sim->inject(false, 1);
      if (command == "r") CHECK(a.rip(0) == sim_t::kBreakWithStatus);
      if (command == "db") CHECK(a.read(sim_t::kDataArea + 1, 2) == std::vector<uint8_t>{10, 13});
      if (command == "bp") {
        REQUIRE(a.t->set_breakpoint(a.t, TOOLHOST_DT_BP_SOFTWARE, sim_t::kIncRax, 1, nullptr) == TOOLHOST_OK);
        CHECK(a.sim->breakpoints_in_table() == 1);  // once, though it was asked twice
      }
      const toolhost_dt_stop_t stop = a.wait(0);
      CHECK(stop.thread == 1);
      CHECK(stop.pc == sim_t::kBreakWithStatus);
      CHECK(a.rip() == a.sim->rip(1));
      CHECK(a.no_stop());
      a.resume(TOOLHOST_DT_CONTINUE);
      if (command == "bp") {
        CHECK(a.wait().pc == sim_t::kIncRax);
        REQUIRE(a.t->clear_breakpoint(a.t, TOOLHOST_DT_BP_SOFTWARE, sim_t::kIncRax, 1, nullptr) == TOOLHOST_OK);
      } else {
        CHECK(eventually_running(*a.sim));
        REQUIRE(a.t->interrupt(a.t, nullptr) == TOOLHOST_OK);
        CHECK(a.wait().reason == TOOLHOST_DT_STOP_INTERRUPT);
      }
    }
    CHECK(a.sim->stats().injected == 6);
    a.close();
    CHECK(eventually_running(*a.sim));
  }
}
