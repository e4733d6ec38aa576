// The kd-backend acceptance scenario over KDNET, through the shared KD state machine
// (toolhost::kd::target) on our kd_link, against the independent simulator in tests/kdnet-sim:
// attach, registers, virtual and physical reads and writes, a breakpoint hit, steps, break-in,
// DbgPrint, detach restoring breakpoints; then the same with lost and corrupted datagrams, and a
// reboot of the target.
#include <catch2/catch.hpp>

#include <thread>

#include "kdnet_sim.hpp"
#include "toolhost/kd/bytes.h"
#include "toolhost/kd/protocol.h"
#include "toolhost/kd/target.h"
#include "toolhost/kdnet/kd_link.hpp"

using namespace std::chrono_literals;
namespace kd = toolhost::kd;
using toolhost::kdnet::endpoint;
using toolhost::kdnet::kd_link;
using sim_t = kdnet_sim::simulator;

namespace {

constexpr const char* kKey = "1.z.10.3w5e11264sgsf";

struct session {
  std::unique_ptr<sim_t> sim;
  std::unique_ptr<kd::target> target;
  endpoint* wire = nullptr;
};

session connect(double drop, double corrupt, uint32_t seed) {
  auto key = toolhost::kdnet::parse_key(kKey);
  REQUIRE(key.ok());
  auto ep = endpoint::listen("127.0.0.1:0", *key);
  REQUIRE(ep.ok());
  kdnet_sim::options o;
  o.port = (*ep)->local_port();
  o.key = kKey;
  o.drop = drop;
  o.corrupt = corrupt;
  o.seed = seed;
  o.poke_interval_ms = 500;
  session s;
  s.sim = std::make_unique<sim_t>(o);
  std::string error;
  REQUIRE(s.sim->start(&error));
  REQUIRE((*ep)->wait_keyed(10s).ok());
  auto link = std::make_unique<kd_link>(std::move(*ep));
  s.wire = &link->wire();
  kd::target_options options;
  options.request_timeout = 3000ms;
  auto t = kd::target::attach(std::move(link), options);
  REQUIRE(t.ok());
  s.target = std::move(*t);
  return s;
}

kd::stop_event expect_stop(kd::target& t) {
  auto stop = t.wait_stop(10s);
  REQUIRE(stop.ok());
  REQUIRE(stop->has_value());
  return **stop;
}

uint64_t rip_of(kd::target& t) {
  auto ctx = t.get_context(t.current_processor());
  REQUIRE(ctx.ok());
  return kd::get_u64(*ctx, kd::kContextRip);
}

void run_scenario(session& s) {
  kd::target& t = *s.target;
  // open: the attach broke in to the running target.
  const kd::stop_event first = expect_stop(t);
  CHECK(first.why == kd::stop_event::reason::interrupt);
  CHECK(t.version().kernel_base == sim_t::kKernelBase);

  // r: the break-in entered DbgBreakPointWithStatus from the kernel loop, and is reported with
  // rip at its int3, as Windows does; the loop's address is the return address on the stack.
  CHECK(rip_of(t) == sim_t::kBreakWithStatus);
  CHECK(first.pc == sim_t::kBreakWithStatus);

  // Virtual and physical reads agree with the image; writes land both ways.
  std::vector<uint8_t> by_va(64), by_pa(64);
  auto got_va = t.read_virtual(sim_t::kDataArea, by_va);
  auto got_pa = t.read_physical(sim_t::kKernelPhysical + 0x3000, by_pa);
  REQUIRE(got_va.ok());
  REQUIRE(got_pa.ok());
  CHECK(*got_va == 64);
  CHECK(*got_pa == 64);
  CHECK(by_va == by_pa);
  CHECK(by_va[5] == 5 * 3 + 7);
  const std::vector<uint8_t> pattern{0xde, 0xad, 0xbe, 0xef};
  REQUIRE(t.write_virtual(sim_t::kDataArea + 8, pattern).ok());
  CHECK(s.sim->read_physical(sim_t::kKernelPhysical + 0x3008, 4) == pattern);
  REQUIRE(t.write_physical(sim_t::kKernelPhysical + 0x3010, pattern).ok());
  std::vector<uint8_t> back(4);
  REQUIRE(t.read_virtual(sim_t::kDataArea + 0x10, back).ok());
  CHECK(back == pattern);
  std::vector<uint8_t> unmapped(16);
  auto none = t.read_virtual(0x1000, unmapped);
  REQUIRE(none.ok());
  CHECK(*none == 0);

  // bp, then g stops there.
  REQUIRE(t.set_breakpoint(sim_t::kIncRax).ok());
  CHECK(s.sim->breakpoints_in_table() == 1);
  REQUIRE(t.resume(false).ok());
  kd::stop_event hit = expect_stop(t);
  CHECK(hit.why == kd::stop_event::reason::breakpoint);
  CHECK(hit.pc == sim_t::kIncRax);
  const uint64_t rax_at_bp = s.sim->rax();

  // t and p: one instruction each (inc rax, then nop).
  REQUIRE(t.resume(true).ok());
  kd::stop_event step = expect_stop(t);
  CHECK(step.why == kd::stop_event::reason::step);
  CHECK(step.pc == sim_t::kIncRax + 3);
  CHECK(s.sim->rax() == rax_at_bp + 1);
  REQUIRE(t.resume(true).ok());
  CHECK(expect_stop(t).pc == sim_t::kIncRax + 4);

  // g again comes back to the breakpoint (the loop runs through it).
  REQUIRE(t.resume(false).ok());
  CHECK(expect_stop(t).pc == sim_t::kIncRax);

  // Without the breakpoint the target runs and prints; break stops it.
  REQUIRE(t.clear_breakpoint(sim_t::kIncRax).ok());
  CHECK(s.sim->breakpoints_in_table() == 0);
  REQUIRE(t.set_breakpoint(sim_t::kCodeStart + 4).ok());  // left set: close must restore it
  REQUIRE(t.clear_breakpoint(sim_t::kCodeStart + 4).ok());
  REQUIRE(t.set_breakpoint(sim_t::kCodeStart + 0x100).ok());  // never reached
  REQUIRE(t.resume(false).ok());
  std::vector<std::string> lines;
  for (int i = 0; i < 100 && lines.empty(); ++i) {
    std::this_thread::sleep_for(50ms);
    lines = t.take_output();
  }
  REQUIRE_FALSE(lines.empty());
  CHECK_THAT(lines.front(), Catch::StartsWith("kdnet-sim: tick"));
  CHECK(t.running());
  REQUIRE(t.interrupt().ok());
  CHECK(expect_stop(t).why == kd::stop_event::reason::interrupt);

  // close restores every breakpoint in the target's table.
  CHECK(s.sim->breakpoints_in_table() == 1);
  REQUIRE(t.detach().ok());
  CHECK(s.sim->breakpoints_in_table() == 0);
  // The backend never reused a KDNET sequence number.
  CHECK(s.sim->stats().repeated_sequences == 0);
}

}  // namespace

TEST_CASE("the kd scenario over KDNET against the simulator") {
  session s = connect(0.0, 0.0, 1);
  run_scenario(s);
  CHECK(s.wire->stats().rejected_unauthenticated == 0);
}

TEST_CASE("the kd scenario over KDNET with 10% loss and 5% corruption") {
  session s = connect(0.10, 0.05, 7);
  run_scenario(s);
  const auto sim = s.sim->stats();
  INFO("dropped " << sim.dropped << ", corrupted " << sim.corrupted << ", sim rejected " << sim.rejected
                  << ", backend rejected " << s.wire->stats().rejected_unauthenticated);
  CHECK(sim.dropped > 0);
  CHECK(sim.corrupted > 0);
  // What the simulator corrupted on its way out the backend refused.
  CHECK(s.wire->stats().rejected_unauthenticated > 0);
  CHECK(s.target->stats().retransmits > 0);
  CHECK(s.target->stats().bad_packets >= s.wire->stats().rejected_unauthenticated);
}

TEST_CASE("a rebooted KDNET target is renegotiated and reported") {
  session s = connect(0.0, 0.0, 3);
  kd::target& t = *s.target;
  expect_stop(t);
  REQUIRE(t.set_breakpoint(sim_t::kCodeStart + 0x100).ok());
  REQUIRE(t.resume(false).ok());
  std::this_thread::sleep_for(300ms);
  s.sim->reboot();
  kd::stop_event e = expect_stop(t);
  CHECK(e.why == kd::stop_event::reason::reboot);
  CHECK(s.wire->generation() == 1);
  CHECK(s.wire->stats().reboots == 1);
  CHECK(s.sim->stats().handshakes >= 2);
  // The new boot answers on the new key and knows none of the old breakpoints.
  CHECK(s.sim->breakpoints_in_table() == 0);
  std::vector<uint8_t> head(2);
  REQUIRE(t.read_virtual(sim_t::kKernelBase, head).ok());
  CHECK(head == std::vector<uint8_t>{'M', 'Z'});
  REQUIRE(t.resume(false).ok());
  std::this_thread::sleep_for(200ms);
  REQUIRE(t.interrupt().ok());
  CHECK(expect_stop(t).why == kd::stop_event::reason::interrupt);
  REQUIRE(t.detach().ok());
}

TEST_CASE("a debugger that restarts while the target runs re-keys it by soliciting a poke") {
  auto key = toolhost::kdnet::parse_key(kKey);
  REQUIRE(key.ok());
  auto first = endpoint::listen("127.0.0.1:0", *key);
  REQUIRE(first.ok());
  const uint16_t port = (*first)->local_port();
  kdnet_sim::options o;
  o.port = port;
  o.key = kKey;
  o.poke_interval_ms = 600000;  // no keepalive comes to the rescue: only a solicited poke can key us
  sim_t sim(o);
  std::string error;
  REQUIRE(sim.start(&error));
  REQUIRE((*first)->wait_keyed(5s).ok());
  first->reset();  // the debugger goes away; the target runs on and keeps printing

  auto second = endpoint::listen("127.0.0.1:" + std::to_string(port), *key);
  REQUIRE(second.ok());
  REQUIRE((*second)->wait_keyed(5s).ok());
  CHECK((*second)->stats().solicitations >= 1);
  // The target takes our reply a moment after we sent it.
  for (int i = 0; i < 100 && sim.stats().handshakes < 2; ++i) std::this_thread::sleep_for(10ms);
  CHECK(sim.stats().handshakes == 2);

  auto link = std::make_unique<kd_link>(std::move(*second));
  auto t = kd::target::attach(std::move(link), kd::target_options{});
  REQUIRE(t.ok());
  CHECK(expect_stop(**t).why == kd::stop_event::reason::interrupt);
  REQUIRE((*t)->detach().ok());
}
