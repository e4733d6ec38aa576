// The kdnet backend through the debug-target C interface (debug_target.h), as the debugger
// plugin drives it, against the independent simulator: open errors, the kd scenario, loss and
// corruption, and a reboot.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include <toolhost/debug_target.h>
#include <toolhost/sdk/json.hpp>

#include "kdnet_factory.h"
#include "kdnet_sim.hpp"
#include "udp_port.hpp"

using namespace std::chrono_literals;
using sim_t = kdnet_sim::simulator;

namespace {

constexpr const char* kKey = "1.z.10.3w5e11264sgsf";

struct text_writer {
  std::string text;
  toolhost_writer_t w{
      this, [](void* ctx, const char* data, size_t size) { static_cast<text_writer*>(ctx)->text.append(data, size); }};
};

std::unique_ptr<sim_t> start_sim(uint16_t port, const char* key, double drop, double corrupt, uint32_t seed) {
  kdnet_sim::options o;
  o.port = port;
  o.key = key;
  o.drop = drop;
  o.corrupt = corrupt;
  o.seed = seed;
  o.poke_interval_ms = 300;
  auto sim = std::make_unique<sim_t>(o);
  std::string error;
  REQUIRE(sim->start(&error));
  return sim;
}

toolhost_debug_target_t* open_kdnet(uint16_t port, const char* key, uint32_t timeout_ms, std::string* error) {
  const auto& f = toolhost::kdnet_backend::kdnet_factory();
  const std::string connect = "127.0.0.1:" + std::to_string(port);
  text_writer err;
  toolhost_debug_target_t* t = f.open(&f, connect.c_str(), key, nullptr, timeout_ms, &err.w);
  if (error != nullptr) *error = err.text;
  return t;
}

toolhost_dt_stop_t wait(toolhost_debug_target_t* t) {
  toolhost_dt_stop_t stop{};
  stop.struct_size = sizeof(stop);
  text_writer err;
  const toolhost_status_t s = t->wait_stop(t, 10000, &stop, &err.w);
  INFO(err.text);
  REQUIRE(s == TOOLHOST_OK);
  return stop;
}

uint64_t register_value(toolhost_debug_target_t* t, const char* name) {
  text_writer d;
  t->describe(t, &d.w);
  auto doc = toolhost::sdk::parse_json(d.text);
  REQUIRE(doc);
  size_t offset = SIZE_MAX;
  for (const auto& r : (*doc)["registers"].GetArray()) {
    if (std::string(r["name"].GetString()) == name) offset = r["offset"].GetUint();
  }
  REQUIRE(offset != SIZE_MAX);
  std::vector<uint8_t> regs(4096);
  size_t done = 0;
  REQUIRE(t->read_registers(t, -1, regs.data(), regs.size(), &done, nullptr) == TOOLHOST_OK);
  REQUIRE(done >= offset + 8);
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | regs[offset + i];
  return v;
}

std::vector<uint8_t> read(toolhost_debug_target_t* t, toolhost_dt_space_t space, uint64_t address, size_t size) {
  std::vector<uint8_t> out(size);
  size_t done = 0;
  text_writer err;
  const toolhost_status_t s = t->read_memory(t, space, address, out.data(), size, &done, &err.w);
  INFO(err.text);
  REQUIRE(s == TOOLHOST_OK);
  out.resize(done);
  return out;
}

void scenario(toolhost_debug_target_t* t, sim_t& sim) {
  CHECK((t->capabilities(t) & TOOLHOST_DT_CAP_RUN_CONTROL) != 0);
  text_writer d;
  t->describe(t, &d.w);
  CHECK_THAT(d.text, Catch::Contains("\"arch\":\"x86_64\""));

  // open left the target halted by a break-in.
  CHECK(wait(t).reason == TOOLHOST_DT_STOP_INTERRUPT);
  // The break-in is reported at the int3 of DbgBreakPointWithStatus (as Windows does).
  CHECK(register_value(t, "rip") == sim_t::kBreakWithStatus);
  const std::vector<uint8_t> ret = read(t, TOOLHOST_DT_VIRTUAL, register_value(t, "rsp"), 8);
  uint64_t return_to = 0;
  for (int i = 7; i >= 0; --i) return_to = return_to << 8 | ret[i];
  CHECK(return_to >= sim_t::kCodeStart);
  CHECK(return_to < sim_t::kCodeStart + 7);
  CHECK(register_value(t, "cr3") == sim_t::kCr3);

  CHECK(read(t, TOOLHOST_DT_VIRTUAL, sim_t::kDataArea, 16) ==
        read(t, TOOLHOST_DT_PHYSICAL, sim_t::kKernelPhysical + 0x3000, 16));
  const uint8_t pattern[4] = {1, 2, 3, 4};
  REQUIRE(t->write_memory(t, TOOLHOST_DT_VIRTUAL, sim_t::kDataArea + 32, pattern, 4, nullptr) == TOOLHOST_OK);
  CHECK(sim.read_physical(sim_t::kKernelPhysical + 0x3020, 4) == std::vector<uint8_t>{1, 2, 3, 4});
  REQUIRE(t->write_memory(t, TOOLHOST_DT_PHYSICAL, sim_t::kKernelPhysical + 0x3030, pattern, 4, nullptr) ==
          TOOLHOST_OK);
  CHECK(read(t, TOOLHOST_DT_VIRTUAL, sim_t::kDataArea + 0x30, 4) == std::vector<uint8_t>{1, 2, 3, 4});

  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, sim_t::kIncRax, 1, nullptr) == TOOLHOST_OK);
  REQUIRE(t->resume(t, TOOLHOST_DT_CONTINUE, -1, nullptr) == TOOLHOST_OK);
  toolhost_dt_stop_t bp = wait(t);
  CHECK(bp.reason == TOOLHOST_DT_STOP_BREAKPOINT);
  CHECK(bp.pc == sim_t::kIncRax);
  REQUIRE(t->resume(t, TOOLHOST_DT_STEP, -1, nullptr) == TOOLHOST_OK);
  toolhost_dt_stop_t step = wait(t);
  CHECK(step.reason == TOOLHOST_DT_STOP_STEP);
  CHECK(step.pc == sim_t::kIncRax + 3);
  CHECK(register_value(t, "rip") == sim_t::kIncRax + 3);

  REQUIRE(t->clear_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, sim_t::kIncRax, 1, nullptr) == TOOLHOST_OK);
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, sim_t::kCodeStart + 0x200, 1, nullptr) == TOOLHOST_OK);
  REQUIRE(t->resume(t, TOOLHOST_DT_CONTINUE, -1, nullptr) == TOOLHOST_OK);
  CHECK(t->is_running(t));
  std::string output;
  for (int i = 0; i < 100 && output.find('\n') == std::string::npos; ++i) {
    std::this_thread::sleep_for(50ms);
    text_writer o;
    t->read_output(t, &o.w);
    output += o.text;
  }
  CHECK_THAT(output, Catch::StartsWith("kdnet-sim: tick"));
  REQUIRE(t->interrupt(t, nullptr) == TOOLHOST_OK);
  CHECK(wait(t).reason == TOOLHOST_DT_STOP_INTERRUPT);
  CHECK(sim.breakpoints_in_table() == 1);
}

}  // namespace

TEST_CASE("open without a key or with a malformed one says what to pass") {
  std::string error;
  CHECK(open_kdnet(free_port(), nullptr, 500, &error) == nullptr);
  CHECK_THAT(error, Catch::Contains("key:\"a.b.c.d\""));
  CHECK(open_kdnet(free_port(), "1.2.3", 500, &error) == nullptr);
  CHECK_THAT(error, Catch::Contains("expected four base-36 numbers separated by dots"));
}

TEST_CASE("a target with another key is never accepted and open says why") {
  const uint16_t port = free_port();
  auto sim = start_sim(port, "9.9.9.9", 0, 0, 5);
  std::string error;
  CHECK(open_kdnet(port, kKey, 1500, &error) == nullptr);
  CHECK_THAT(error, Catch::Contains("No KDNET target poked"));
  CHECK_THAT(error, Catch::Contains("same key"));
  CHECK_FALSE(sim->keyed());
}

TEST_CASE("the kd scenario through debug_target.h over KDNET") {
  const uint16_t port = free_port();
  auto sim = start_sim(port, kKey, 0, 0, 11);
  std::string error;
  toolhost_debug_target_t* t = open_kdnet(port, kKey, 10000, &error);
  INFO(error);
  REQUIRE(t != nullptr);
  scenario(t, *sim);

  // ba e1: a debug-register breakpoint stops there, and g steps off it to hit it again.
  REQUIRE((t->capabilities(t) & TOOLHOST_DT_CAP_HW_BREAKPOINTS) != 0);
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_HARDWARE, sim_t::kCodeStart + 4, 1, nullptr) == TOOLHOST_OK);
  for (int round = 0; round < 2; ++round) {
    REQUIRE(t->resume(t, TOOLHOST_DT_CONTINUE, -1, nullptr) == TOOLHOST_OK);
    toolhost_dt_stop_t hw = wait(t);
    CHECK(hw.reason == TOOLHOST_DT_STOP_BREAKPOINT);
    CHECK(hw.pc == sim_t::kCodeStart + 4);
  }
  REQUIRE(t->clear_breakpoint(t, TOOLHOST_DT_BP_HARDWARE, sim_t::kCodeStart + 4, 1, nullptr) == TOOLHOST_OK);
  CHECK(sim->breakpoints_in_table() == 1);  // only the software one from the scenario

  // .reboot: the target reboots, is renegotiated, and the stop says so.
  text_writer out;
  REQUIRE(t->extension(t, "reboot", "{}", &out.w) == TOOLHOST_OK);
  CHECK(wait(t).reason == TOOLHOST_DT_STOP_REBOOT);
  CHECK(sim->stats().boots == 1);
  CHECK(register_value(t, "cr3") == sim_t::kCr3);

  t->close(t);
  CHECK(sim->breakpoints_in_table() == 0);
  CHECK(sim->stats().repeated_sequences == 0);
}

TEST_CASE("the same scenario with 10% loss and 5% corruption and then a reboot") {
  const uint16_t port = free_port();
  auto sim = start_sim(port, kKey, 0.10, 0.05, 23);
  std::string error;
  toolhost_debug_target_t* t = open_kdnet(port, kKey, 15000, &error);
  INFO(error);
  REQUIRE(t != nullptr);
  scenario(t, *sim);

  REQUIRE(t->resume(t, TOOLHOST_DT_CONTINUE, -1, nullptr) == TOOLHOST_OK);
  std::this_thread::sleep_for(200ms);
  sim->reboot();
  toolhost_dt_stop_t reboot = wait(t);
  CHECK(reboot.reason == TOOLHOST_DT_STOP_REBOOT);
  CHECK(sim->breakpoints_in_table() == 0);
  CHECK(read(t, TOOLHOST_DT_VIRTUAL, sim_t::kKernelBase, 2) == std::vector<uint8_t>{'M', 'Z'});
  t->close(t);
  const auto c = sim->stats();
  CHECK(c.dropped > 0);
  CHECK(c.corrupted > 0);
  CHECK(c.repeated_sequences == 0);
  CHECK(sim->breakpoints_in_table() == 0);
}
