// The debugger over the gdb backend against QEMU's gdbstub running the repository's test guest
// (TCG, two vCPUs): registers, virtual reads through 4 KiB / 2 MiB / 1 GiB mappings, physical
// reads, software, hardware and data breakpoints, and the vCPU list.
#include <catch2/catch.hpp>

#include <string>

#include <toolhost/sdk/json.hpp>

#include "guest_layout.h"
#include "qemu_guest.hpp"
#include "target_adapter.hpp"
#include "tools.hpp"

using toolhost::debugger::debugger_tools;

namespace {

struct answer {
  std::string text;
  bool error = false;
};

answer run(debugger_tools& tools, const std::string& line, int64_t timeout_ms = 20000) {
  auto doc = toolhost::sdk::parse_json(tools.command(line, timeout_ms, "text", [] { return false; }).to_json());
  answer a;
  for (const auto& block : (*doc)["content"].GetArray()) a.text += block["text"].GetString();
  a.error = doc->HasMember("isError") && (*doc)["isError"].GetBool();
  UNSCOPED_INFO("> " << line << "\n" << a.text);
  return a;
}

// The db bytes WinDbg would print for pattern bytes 16..31 of a guest pattern (the guest writes
// byte k = (k * mul + add) & 0xff, then its 16-byte signature over the start).
std::string pattern_bytes(int mul, int add) {
  std::string out;
  for (int k = 16; k < 32; ++k) {
    char b[4];
    std::snprintf(b, sizeof(b), "%02x", (k * mul + add) & 0xff);
    out += b;
    out += k == 23 ? '-' : ' ';
  }
  out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("debugging the QEMU test guest through its gdbstub", "[debugger][qemu]") {
  toolhost::test::qemu_guest guest("256M", {"-smp", "2"});
  REQUIRE(guest.wait_ready());
  debugger_tools tools([](const std::string& name) { return name == "gdb" ? toolhost::gdb::factory() : nullptr; }, {});
  auto opened = toolhost::sdk::parse_json(tools.open("gdb", guest.gdb_socket(), "").to_json());
  REQUIRE(opened);
  INFO(toolhost::sdk::to_json(*opened));
  REQUIRE_FALSE(opened->HasMember("isError"));
  CHECK((*opened)["structuredContent"]["processors"].GetInt() == 2);
  CHECK(std::string((*opened)["structuredContent"]["kind"].GetString()) == "system");

  auto cpus = run(tools, "~");
  CHECK(cpus.text.find("0  Id: 1") != std::string::npos);
  CHECK(cpus.text.find("1  Id: 2") != std::string::npos);

  auto regs = run(tools, "r r12, r13, r14, r15");
  REQUIRE_FALSE(regs.error);
  CHECK(regs.text.find("r12=1212121212121212") != std::string::npos);
  CHECK(regs.text.find("r14=0123456789abcdef") != std::string::npos);
  CHECK(regs.text.find("r15=fedcba9876543210") != std::string::npos);
  auto cr3 = run(tools, "r cr3");
  CHECK(cr3.text.find("cr3=0000000000110000") != std::string::npos);

  // Virtual reads through each page size (signature, then the pattern), and the same bytes by
  // physical address.
  auto p4k = run(tools, "db ffff9000`40603000 L20");
  CHECK(p4k.text.find("TOOLHOST-4K-PAGE") != std::string::npos);
  CHECK(p4k.text.find(pattern_bytes(GUEST_P4K_MUL, GUEST_P4K_ADD)) != std::string::npos);
  auto phys = run(tools, "!db 305000 L20");
  CHECK(phys.text.find("TOOLHOST-4K-PAGE") != std::string::npos);
  CHECK(phys.text.find(pattern_bytes(GUEST_P4K_MUL, GUEST_P4K_ADD)) != std::string::npos);
  auto p4k_second = run(tools, "dq ffff9000`40604000 L4");
  auto phys_second = run(tools, "!dq 302000 L4");
  REQUIRE_FALSE(p4k_second.error);
  REQUIRE_FALSE(phys_second.error);
  CHECK(p4k_second.text.substr(19, 35) == phys_second.text.substr(19, 35));  // the first two qwords
  auto p2m = run(tools, "db ffffa000`c0bff000 L20");
  CHECK(p2m.text.find("TOOLHOST-2M-PAGE") != std::string::npos);
  CHECK(p2m.text.find(pattern_bytes(GUEST_P2M_MUL, GUEST_P2M_ADD)) != std::string::npos);
  auto p1g = run(tools, "db ffffc000`00800000 L20");
  CHECK(p1g.text.find("TOOLHOST-1G-PAGE") != std::string::npos);
  CHECK(p1g.text.find(pattern_bytes(GUEST_P1G_MUL, GUEST_P1G_ADD)) != std::string::npos);
  auto unmapped = run(tools, "db ffff8000`00000000 L10");
  CHECK(unmapped.error);
  CHECK(unmapped.text.find("Memory access error") != std::string::npos);
  auto ready = run(tools, "dq 108008 L1");
  CHECK(ready.text.find("59444145`52545347") != std::string::npos);

  // A software breakpoint on guest_tick.
  REQUIRE_FALSE(run(tools, "bp 101000").error);
  auto sw = run(tools, "g");
  CHECK(sw.text.find("Breakpoint 0 hit") != std::string::npos);
  CHECK(sw.text.find("[target halted @ 0 00000000`00101000") != std::string::npos);

  // A hardware execution breakpoint at the same place.
  REQUIRE_FALSE(run(tools, "bc *; ba e1 101000").error);
  auto hw = run(tools, "g");
  CHECK(hw.text.find("Breakpoint 0 hit") != std::string::npos);
  CHECK(hw.text.find("[target halted @ 0 00000000`00101000") != std::string::npos);

  // A data breakpoint on the counter guest_tick increments.
  REQUIRE_FALSE(run(tools, "bc *; ba w8 108000").error);
  auto data = run(tools, "g");
  CHECK(data.text.find("Breakpoint 0 hit") != std::string::npos);
  REQUIRE_FALSE(run(tools, "bc *").error);

  // A machine has no POSIX signals: the filters say they do not apply.
  auto filters = run(tools, "sx");
  CHECK(filters.text.find("is a system, not a process: it reports no POSIX signals") != std::string::npos);

  // The second vCPU can be selected.
  auto second = run(tools, "~1s");
  REQUIRE_FALSE(second.error);
  CHECK(second.text.find("[target halted @ 1 ") != std::string::npos);
  tools.close();
}
