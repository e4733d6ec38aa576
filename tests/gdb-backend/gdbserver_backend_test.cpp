// The gdb backend, through the debug_target.h table, against a real gdbserver.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "gdbserver_process.hpp"
#include "target_adapter.hpp"

using toolhost::sdk::string_writer;

namespace {

struct target_handle {
  toolhost_debug_target_t* t = nullptr;
  ~target_handle() {
    if (t != nullptr) t->close(t);
  }
};

uint64_t symbol_address(const std::string& program, const std::string& name, uint64_t bias) {
  // nm gives the file address; the bias comes from the module list.
  std::string cmd = "nm " + program + " | awk '$3==\"" + name + "\"{print $1}'";
  FILE* p = popen(cmd.c_str(), "r");
  char line[64] = {0};
  fgets(line, sizeof(line), p);
  pclose(p);
  return std::stoull(line, nullptr, 16) + bias;
}

}  // namespace

TEST_CASE("gdb backend drives a process under gdbserver", "[gdbserver]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM);
  const auto* factory = toolhost::gdb::factory();
  string_writer error;
  target_handle h;
  h.t = factory->open(factory, server.address().c_str(), nullptr, nullptr, 5000, error.raw());
  INFO(error.text());
  REQUIRE(h.t != nullptr);
  auto* t = h.t;

  string_writer desc;
  t->describe(t, desc.raw());
  auto d = toolhost::sdk::parse_json(desc.text());
  REQUIRE(d);
  CHECK(toolhost::sdk::string_member(*d, "arch") == "x86_64");
  CHECK(toolhost::sdk::string_member(*d, "kind") == "process");
  CHECK(desc.text().find(R"("name":"rip")") != std::string::npos);

  // The attach stop is reported once.
  toolhost_dt_stop_t stop{};
  stop.struct_size = sizeof(stop);
  REQUIRE(t->wait_stop(t, 0, &stop, error.raw()) == TOOLHOST_OK);
  CHECK(t->wait_stop(t, 0, &stop, error.raw()) != TOOLHOST_OK);

  // Run to main, where the libraries are loaded, through a software breakpoint.
  string_writer modules0;
  t->list_modules(t, modules0.raw());
  auto m0 = toolhost::sdk::parse_json(modules0.text());
  REQUIRE(m0);
  REQUIRE(m0->IsArray());
  REQUIRE(m0->Size() >= 1);
  const uint64_t bias = std::stoull(std::string(toolhost::sdk::string_member((*m0)[0], "base").value()), nullptr, 16);
  const uint64_t main_address = symbol_address(DEMO_PROGRAM, "main", bias & ~0xfffull);
  const uint64_t report_address = symbol_address(DEMO_PROGRAM, "report", bias & ~0xfffull);
  REQUIRE(t->set_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, report_address, 1, error.raw()) == TOOLHOST_OK);
  REQUIRE(t->resume(t, TOOLHOST_DT_CONTINUE, -1, error.raw()) == TOOLHOST_OK);
  CHECK(t->is_running(t));
  REQUIRE(t->wait_stop(t, 10000, &stop, error.raw()) == TOOLHOST_OK);
  CHECK(stop.reason == TOOLHOST_DT_STOP_BREAKPOINT);
  CHECK(stop.pc == report_address);
  CHECK(main_address != 0);

  // The program wrote its message before report().
  const uint64_t message = symbol_address(DEMO_PROGRAM, "message", bias & ~0xfffull);
  char text[13] = {0};
  size_t done = 0;
  REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, message, text, 12, &done, error.raw()) == TOOLHOST_OK);
  CHECK(done == 12);
  CHECK(std::string(text) == "hello, world");
  // A big read crosses many packets and stops at the end of the mapping.
  std::vector<uint8_t> big(1 << 20);
  // The executable's mappings are contiguous from its base up to its data page, then a hole.
  const uint64_t base = bias & ~0xfffull;
  REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, base, big.data(), big.size(), &done, error.raw()) == TOOLHOST_OK);
  CHECK(done > message - base);
  CHECK(done < big.size());
  CHECK(std::memcmp(big.data() + (message - base), "hello, world", 12) == 0);
  CHECK(std::memcmp(big.data(),
                    "\x7f"
                    "ELF",
                    4) == 0);
  CHECK(t->read_memory(t, TOOLHOST_DT_VIRTUAL, 0x10, text, 4, &done, error.raw()) == TOOLHOST_ERR_NOT_FOUND);

  // Write a byte the program prints.
  REQUIRE(t->write_memory(t, TOOLHOST_DT_VIRTUAL, message, "J", 1, error.raw()) == TOOLHOST_OK);

  // libc is in the module list now.
  string_writer modules;
  t->list_modules(t, modules.raw());
  CHECK(modules.text().find("libc.so.6") != std::string::npos);

  // Registers: rip is the breakpoint.
  uint8_t regs[4096];
  REQUIRE(t->read_registers(t, -1, regs, sizeof(regs), &done, error.raw()) == TOOLHOST_OK);
  uint64_t rip = 0;
  std::memcpy(&rip, regs + 16 * 8, 8);  // rax..r15 come first
  CHECK(rip == report_address);

  // A single step moves off the breakpoint.
  REQUIRE(t->resume(t, TOOLHOST_DT_STEP, -1, error.raw()) == TOOLHOST_OK);
  REQUIRE(t->wait_stop(t, 5000, &stop, error.raw()) == TOOLHOST_OK);
  CHECK(stop.reason == TOOLHOST_DT_STOP_STEP);
  CHECK(stop.pc > report_address);

  string_writer threads;
  t->list_threads(t, threads.raw());
  CHECK(threads.text().find(R"("current":true)") != std::string::npos);

  REQUIRE(t->clear_breakpoint(t, TOOLHOST_DT_BP_SOFTWARE, report_address, 1, error.raw()) == TOOLHOST_OK);
  REQUIRE(t->resume(t, TOOLHOST_DT_CONTINUE, -1, error.raw()) == TOOLHOST_OK);
  REQUIRE(t->wait_stop(t, 10000, &stop, error.raw()) == TOOLHOST_OK);
  CHECK(stop.reason == TOOLHOST_DT_STOP_EXITED);
  CHECK(server.wait_for_output("message=Jello, world"));
}

TEST_CASE("gdb backend interrupts a running process", "[gdbserver]") {
  toolhost::testing::gdbserver_process server(DEMO_PROGRAM, {"spin"});
  const auto* factory = toolhost::gdb::factory();
  string_writer error;
  target_handle h;
  h.t = factory->open(factory, server.address().c_str(), nullptr, nullptr, 5000, error.raw());
  REQUIRE(h.t != nullptr);
  auto* t = h.t;
  toolhost_dt_stop_t stop{};
  stop.struct_size = sizeof(stop);
  (void)t->wait_stop(t, 0, &stop, error.raw());
  REQUIRE(t->resume(t, TOOLHOST_DT_CONTINUE, -1, error.raw()) == TOOLHOST_OK);
  CHECK(t->wait_stop(t, 300, &stop, error.raw()) == TOOLHOST_ERR_TIMEOUT);
  char byte = 0;
  size_t done = 0;
  CHECK(t->read_memory(t, TOOLHOST_DT_VIRTUAL, 0x1000, &byte, 1, &done, error.raw()) == TOOLHOST_ERR_WRONG_STATE);
  REQUIRE(t->interrupt(t, error.raw()) == TOOLHOST_OK);
  REQUIRE(t->wait_stop(t, 5000, &stop, error.raw()) == TOOLHOST_OK);
  CHECK(stop.reason == TOOLHOST_DT_STOP_INTERRUPT);
}

TEST_CASE("gdb backend explains a refused connection", "[gdbserver]") {
  const auto* factory = toolhost::gdb::factory();
  string_writer error;
  CHECK(factory->open(factory, "127.0.0.1:1", nullptr, nullptr, 1000, error.raw()) == nullptr);
  CHECK(error.text().find("cannot connect to 127.0.0.1:1") != std::string::npos);
  string_writer bad;
  CHECK(factory->open(factory, "nonsense", nullptr, nullptr, 1000, bad.raw()) == nullptr);
  CHECK(bad.text().find("host:port") != std::string::npos);
}
