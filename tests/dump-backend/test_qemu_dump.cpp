// A QEMU guest's `dump-guest-memory` file (ELF): physical reads and vCPU registers through the
// dump backend match what QEMU's gdbstub shows live, read with real gdb while the VM is stopped.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <regex>

#include <toolhost/snapshot/session.hpp>
#include "guest_layout.h"
#include "open_dump.hpp"
#include "qemu_guest.hpp"
#include "qmp_client.hpp"

namespace db = toolhost::dump_backend;

namespace {

uint8_t pattern_byte(uint64_t k, uint64_t mul, uint64_t add) { return static_cast<uint8_t>((k * mul + add) & 0xff); }

}  // namespace

TEST_CASE("a QEMU dump-guest-memory file matches the live gdbstub", "[dump][qemu]") {
  toolhost::test::qemu_guest guest("256M", {"-smp", "2"});
  REQUIRE(guest.wait_ready());
  auto qmp = toolhost::memory_backend::qmp_client::connect(guest.qmp_socket(), 10000);
  REQUIRE(qmp.ok());
  REQUIRE(qmp->execute("stop").ok());
  const std::string path = guest.dir() + "/guest.elf";
  auto dumped = qmp->execute("dump-guest-memory", "{\"paging\":false,\"protocol\":\"file:" + path + "\"}");
  INFO(dumped.status().message());
  REQUIRE(dumped.ok());

  // Live, through the gdbstub (the VM is still stopped): registers, then 9 MiB of RAM.
  const std::string bin = guest.dir() + "/live.bin";
  const std::string live =
      guest.gdb({"info registers rip rsp r12 r13 r14 r15 eflags cr3 cs", "maintenance packet Qqemu.PhyMemMode:1",
                 "dump binary memory " + bin + " 0 0x900000", "maintenance packet Qqemu.PhyMemMode:0"});
  INFO(live);
  const std::string live_ram = toolhost::test::qemu_guest::read_file(bin);
  REQUIRE(live_ram.size() == 0x900000);

  auto snap = db::open_dump(path);
  REQUIRE(snap.ok());
  toolhost_debug_target_t* t = toolhost::snapshots::make_target(std::move(*snap));
  CHECK((t->capabilities(t) & TOOLHOST_DT_CAP_READ_PHYSICAL) != 0);
  CHECK((t->capabilities(t) & TOOLHOST_DT_CAP_THREADS) != 0);  // two vCPUs

  std::vector<uint8_t> ram(0x900000);
  size_t done = 0;
  REQUIRE(t->read_memory(t, TOOLHOST_DT_PHYSICAL, 0, ram.data(), ram.size(), &done, nullptr) == TOOLHOST_OK);
  REQUIRE(done == ram.size());
  size_t differing = 0;
  for (size_t i = 0; i < ram.size(); ++i) differing += ram[i] != static_cast<uint8_t>(live_ram[i]);
  CHECK(differing == 0);

  // The patterns, physically and through the guest's own page tables (CR3 from the notes).
  for (uint64_t k = 0; k < GUEST_P1G_LEN; ++k) {
    if (k >= 16 && ram[GUEST_P1G_PA + k] != pattern_byte(k, GUEST_P1G_MUL, GUEST_P1G_ADD))
      FAIL("1G pattern byte " << k);
  }
  std::vector<uint8_t> v(GUEST_P4K_LEN);
  REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, GUEST_P4K_VA, v.data(), v.size(), &done, nullptr) == TOOLHOST_OK);
  REQUIRE(done == v.size());
  CHECK(std::memcmp(v.data(), GUEST_P4K_SIG, 16) == 0);
  CHECK(v[0x1000] == pattern_byte(0x1000, GUEST_P4K_MUL, GUEST_P4K_ADD));
  uint8_t sig[16];
  for (uint64_t va : {GUEST_P2M_VA, GUEST_P1G_VA}) {
    REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, va, sig, 16, &done, nullptr) == TOOLHOST_OK);
  }
  CHECK(std::memcmp(sig, GUEST_P1G_SIG, 16) == 0);
  CHECK(t->read_memory(t, TOOLHOST_DT_VIRTUAL, GUEST_UNMAPPED_VA, sig, 16, &done, nullptr) == TOOLHOST_ERR_NOT_FOUND);

  // vCPU 0's registers equal gdb's.
  std::string described;
  toolhost_writer_t w{&described, [](void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }};
  t->describe(t, &w);
  std::vector<std::string> names;
  const std::regex name_re("\"name\":\"([a-z0-9_]+)\"");
  for (std::sregex_iterator it(described.begin(), described.end(), name_re), end; it != end; ++it)
    names.push_back((*it)[1]);
  std::vector<uint64_t> values(names.size());
  REQUIRE(t->read_registers(t, 0, values.data(), values.size() * 8, &done, nullptr) == TOOLHOST_OK);
  std::map<std::string, uint64_t> mine;
  for (size_t i = 0; i < names.size(); ++i) mine[names[i]] = values[i];
  const std::regex reg_line(R"((?:^|\n)([a-z0-9]+)\s+(0x[0-9a-f]+))");
  int compared = 0;
  for (std::sregex_iterator it(live.begin(), live.end(), reg_line), end; it != end; ++it) {
    const std::string name = (*it)[1];
    if (mine.count(name) == 0) continue;
    CAPTURE(name);
    CHECK(mine[name] == std::stoull((*it)[2], nullptr, 16));
    ++compared;
  }
  CHECK(compared == 9);
  CHECK(mine["r14"] == GUEST_R14);
  CHECK((mine["cr3"] & ~0xfffull) == GUEST_CR3);
  t->close(t);
}
