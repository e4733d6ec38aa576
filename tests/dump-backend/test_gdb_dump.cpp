// `.dump /f` over the gdb backend (what the debugger does for a QEMU guest): dump_target() on a
// live gdbstub session, with RAM found by probing, writes a full dump that the dump backend
// opens with the same memory, registers and page tables.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <regex>
#include <string>

#include <toolhost/debug_target.h>
#include <toolhost/windump/target_dump.hpp>

#include <toolhost/snapshot/session.hpp>
#include "../../plugins/dump-backend/open_dump.hpp"
#include "guest_layout.h"
#include "qemu_guest.hpp"

namespace toolhost::gdb {
const toolhost_debug_target_factory_t* factory();  // plugins/gdb-backend/target_adapter.hpp
}

namespace {

void append(void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }

// Register name -> value, through the session's own register map.
std::map<std::string, uint64_t> registers_of(toolhost_debug_target_t* t) {
  std::string described;
  toolhost_writer_t w{&described, append};
  t->describe(t, &w);
  std::vector<uint8_t> buffer(8192);
  size_t done = 0;
  std::map<std::string, uint64_t> regs;
  if (t->read_registers(t, -1, buffer.data(), buffer.size(), &done, nullptr) != TOOLHOST_OK) return regs;
  const std::regex reg_re(R"re(\{"name":"([a-z0-9_]+)","bits":(\d+),"offset":(\d+))re");
  for (std::sregex_iterator it(described.begin(), described.end(), reg_re), end; it != end; ++it) {
    const size_t bytes = std::min<size_t>(8, std::stoul((*it)[2]) / 8);
    const size_t offset = std::stoul((*it)[3]);
    if (offset + bytes > done) continue;
    uint64_t v = 0;
    std::memcpy(&v, buffer.data() + offset, bytes);
    regs[(*it)[1]] = v;
  }
  return regs;
}

}  // namespace

TEST_CASE(".dump /f of a QEMU guest over the gdb backend reads back in the dump backend", "[dump][qemu][gdb]") {
  toolhost::test::qemu_guest guest("256M");
  REQUIRE(guest.wait_ready());
  std::string error;
  toolhost_writer_t ew{&error, append};
  const toolhost_debug_target_factory_t* gdb = toolhost::gdb::factory();
  toolhost_debug_target_t* live = gdb->open(gdb, guest.gdb_socket().c_str(), nullptr, nullptr, 10000, &ew);
  INFO(error);
  REQUIRE(live != nullptr);
  REQUIRE((live->capabilities(live) & TOOLHOST_DT_CAP_READ_PHYSICAL) != 0);

  const std::string path = guest.dir() + "/gdb.dmp";
  toolhost::windump::target_dump_options options;
  options.probe_limit = 16ull << 20;  // probe the first 16 MiB (the patterns live there)
  options.comment = "over gdb";
  auto written = toolhost::windump::dump_target(live, path, options);
  INFO((written.ok() ? std::string() : std::string(written.status().message())));
  REQUIRE(written.ok());
  CHECK(written->pages_written == (16ull << 20) / 0x1000);

  auto snap = toolhost::dump_backend::open_dump(path);
  REQUIRE(snap.ok());
  toolhost_debug_target_t* dump = toolhost::snapshots::make_target(std::move(*snap));

  // The same bytes as the live session, where the patterns and page tables are.
  for (uint64_t at : {GUEST_P4K_PA, GUEST_P4K_PA2, GUEST_P2M_PA, GUEST_P1G_PA, GUEST_CR3, GUEST_COUNTER}) {
    CAPTURE(at);
    std::vector<uint8_t> a(0x1000), b(0x1000);
    size_t done_a = 0, done_b = 0;
    REQUIRE(live->read_memory(live, TOOLHOST_DT_PHYSICAL, at, a.data(), a.size(), &done_a, nullptr) == TOOLHOST_OK);
    REQUIRE(dump->read_memory(dump, TOOLHOST_DT_PHYSICAL, at, b.data(), b.size(), &done_b, nullptr) == TOOLHOST_OK);
    REQUIRE(done_a == a.size());
    REQUIRE(done_b == b.size());
    CHECK(a == b);
  }
  // The registers (context record) and, through the DTB from cr3, virtual addresses.
  const auto a = registers_of(live);
  const auto b = registers_of(dump);
  for (const char* name : {"rip", "rsp", "r12", "r13", "r14", "r15", "rax", "rbx"}) {
    CAPTURE(name);
    REQUIRE(a.count(name) == 1);
    REQUIRE(b.count(name) == 1);
    CHECK(a.at(name) == b.at(name));
  }
  CHECK(b.at("r14") == GUEST_R14);
  uint8_t sig[16];
  size_t done = 0;
  REQUIRE(dump->read_memory(dump, TOOLHOST_DT_VIRTUAL, GUEST_P2M_VA, sig, 16, &done, nullptr) == TOOLHOST_OK);
  CHECK(std::memcmp(sig, GUEST_P2M_SIG, 16) == 0);
  dump->close(dump);
  live->close(live);
}
