// The memory backend against a live QEMU guest: its physical reads agree with the gdbstub's,
// the patterns read through the guest's page tables, the RAM above 4 GiB is found from QMP, and
// bad input gets errors that name the problem.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include <toolhost/windump/target_dump.hpp>

#include <toolhost/snapshot/session.hpp>
#include "guest_layout.h"
#include "memory_target.hpp"
#include "open_dump.hpp"
#include "qemu_guest.hpp"
#include "qemu_layout.hpp"

namespace mb = toolhost::memory_backend;
namespace db = toolhost::dump_backend;

namespace {

uint8_t pattern_byte(uint64_t k, uint64_t mul, uint64_t add) { return static_cast<uint8_t>((k * mul + add) & 0xff); }

toolhost_debug_target_t* open_target(const std::string& connect, std::string* error = nullptr) {
  auto options = mb::parse_memory_options(connect, "");
  if (!options.ok()) {
    if (error) *error = std::string(options.status().message());
    return nullptr;
  }
  auto snap = mb::open_memory(*options);
  if (!snap.ok()) {
    if (error) *error = std::string(snap.status().message());
    return nullptr;
  }
  return toolhost::snapshots::make_target(std::move(*snap));
}

uint64_t read_u64(toolhost_debug_target_t* t, uint64_t pa) {
  uint64_t v = 0;
  size_t done = 0;
  t->read_memory(t, TOOLHOST_DT_PHYSICAL, pa, &v, 8, &done, nullptr);
  return v;
}

}  // namespace

TEST_CASE("the memory backend reads a live QEMU guest like the gdbstub does", "[memory][qemu]") {
  toolhost::test::qemu_guest guest("256M");
  REQUIRE(guest.wait_ready());
  const std::string pid = std::to_string(guest.qemu_pid());

  for (const std::string connect : {"pid=" + pid + ",qmp=" + guest.qmp_socket(), pid, "pid=" + pid + ",qmp=none"}) {
    CAPTURE(connect);
    std::string error;
    toolhost_debug_target_t* t = open_target(connect, &error);
    INFO(error);
    REQUIRE(t != nullptr);
    CHECK((t->capabilities(t) & TOOLHOST_DT_CAP_READ_PHYSICAL) != 0);
    CHECK((t->capabilities(t) & TOOLHOST_DT_CAP_RUN_CONTROL) == 0);
    {
      // Without qmp=, the backend finds QEMU's own -qmp socket on its command line.
      std::string described;
      toolhost_writer_t dw{&described,
                           [](void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }};
      t->describe(t, &dw);
      const bool none = connect.find("qmp=none") != std::string::npos;
      CHECK(described.find(none ? "\"layout_from\":\"command line\"" : "\"layout_from\":\"qmp\"") != std::string::npos);
    }

    // 9 MiB through the backend and through gdb; only the tick counter may move in between.
    std::vector<uint8_t> mine(0x900000);
    size_t done = 0;
    REQUIRE(t->read_memory(t, TOOLHOST_DT_PHYSICAL, 0, mine.data(), mine.size(), &done, nullptr) == TOOLHOST_OK);
    REQUIRE(done == mine.size());
    const std::vector<uint8_t> live = guest.gdb_physical(0, mine.size());
    REQUIRE(live.size() == mine.size());
    size_t differing = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      if (i >= GUEST_COUNTER && i < GUEST_COUNTER + 8) continue;
      differing += mine[i] != live[i];
    }
    CHECK(differing == 0);
    CHECK(std::memcmp(mine.data() + GUEST_P1G_PA, GUEST_P1G_SIG, 16) == 0);
    CHECK(mine[GUEST_P2M_PA + 100] == pattern_byte(100, GUEST_P2M_MUL, GUEST_P2M_ADD));
    uint64_t ready;
    std::memcpy(&ready, mine.data() + GUEST_READY, 8);
    CHECK(ready == GUEST_READY_MAGIC);

    // It is live: the guest's counter moves.
    const uint64_t before = read_u64(t, GUEST_COUNTER);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(read_u64(t, GUEST_COUNTER) > before);

    std::string why;
    toolhost_writer_t w{&why, [](void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }};
    CHECK(t->resume(t, TOOLHOST_DT_CONTINUE, -1, &w) == TOOLHOST_ERR_UNSUPPORTED);
    CHECK(why.find("gdb backend") != std::string::npos);
    t->close(t);
  }
}

TEST_CASE("the memory backend walks the guest's page tables and writes its RAM", "[memory][qemu]") {
  toolhost::test::qemu_guest guest("256M");
  REQUIRE(guest.wait_ready());
  char connect[256];
  std::snprintf(connect, sizeof connect, "pid=%d,qmp=%s,cr3=0x%llx", guest.qemu_pid(), guest.qmp_socket().c_str(),
                static_cast<unsigned long long>(GUEST_CR3));
  std::string error;
  toolhost_debug_target_t* t = open_target(connect, &error);
  INFO(error);
  REQUIRE(t != nullptr);
  CHECK((t->capabilities(t) & TOOLHOST_DT_CAP_READ_VIRTUAL) != 0);
  std::vector<uint8_t> v(GUEST_P4K_LEN);
  size_t done = 0;
  REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, GUEST_P4K_VA, v.data(), v.size(), &done, nullptr) == TOOLHOST_OK);
  REQUIRE(done == v.size());
  CHECK(std::memcmp(v.data(), GUEST_P4K_SIG, 16) == 0);
  for (uint64_t k = 16; k < GUEST_P4K_LEN; ++k) {
    if (v[k] != pattern_byte(k, GUEST_P4K_MUL, GUEST_P4K_ADD)) FAIL("4K pattern byte " << k);
  }
  uint8_t sig[16];
  REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, GUEST_P2M_VA, sig, 16, &done, nullptr) == TOOLHOST_OK);
  CHECK(std::memcmp(sig, GUEST_P2M_SIG, 16) == 0);
  CHECK(t->read_memory(t, TOOLHOST_DT_VIRTUAL, GUEST_UNMAPPED_VA, sig, 16, &done, nullptr) == TOOLHOST_ERR_NOT_FOUND);

  // A write through the backend shows in the gdbstub.
  const uint8_t mark[8] = {'w', 'r', 'i', 't', 't', 'e', 'n', '!'};
  REQUIRE(t->write_memory(t, TOOLHOST_DT_PHYSICAL, 0x700000, mark, sizeof mark, nullptr) == TOOLHOST_OK);
  const std::vector<uint8_t> live = guest.gdb_physical(0x700000, 8);
  REQUIRE(live.size() == 8);
  CHECK(std::memcmp(live.data(), mark, 8) == 0);

  // `.dump /f` of the live VM: a full Windows dump of its 256 MiB that reads back, virtual
  // addresses included (the DTB comes from the cr3 given at open).
  const std::string path = guest.dir() + "/live.dmp";
  auto written = toolhost::windump::dump_target(t, path, {});
  INFO((written.ok() ? std::string() : std::string(written.status().message())));
  REQUIRE(written.ok());
  CHECK(written->pages_written == (256ull << 20) / 0x1000);
  CHECK(written->pages_unreadable == 0);
  t->close(t);
  auto snap = db::open_dump(path);
  REQUIRE(snap.ok());
  toolhost_debug_target_t* dump = toolhost::snapshots::make_target(std::move(*snap));
  REQUIRE(dump->read_memory(dump, TOOLHOST_DT_VIRTUAL, GUEST_P1G_VA, sig, 16, &done, nullptr) == TOOLHOST_OK);
  CHECK(std::memcmp(sig, GUEST_P1G_SIG, 16) == 0);
  REQUIRE(dump->read_memory(dump, TOOLHOST_DT_PHYSICAL, 0x700000, sig, 8, &done, nullptr) == TOOLHOST_OK);
  CHECK(std::memcmp(sig, mark, 8) == 0);
  dump->close(dump);
}

TEST_CASE("RAM above 4 GiB is found through QMP's memory layout", "[memory][qemu]") {
  toolhost::test::qemu_guest guest("4608M");
  REQUIRE(guest.wait_ready());
  const std::string pid = std::to_string(guest.qemu_pid());
  std::string error;
  toolhost_debug_target_t* t = open_target("pid=" + pid + ",qmp=" + guest.qmp_socket(), &error);
  INFO(error);
  REQUIRE(t != nullptr);
  std::string described;
  toolhost_writer_t w{&described, [](void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }};
  t->describe(t, &w);
  CHECK(described.find("\"start\":\"0x100000000\"") != std::string::npos);
  std::vector<uint8_t> page(GUEST_PHI_LEN);
  size_t done = 0;
  REQUIRE(t->read_memory(t, TOOLHOST_DT_PHYSICAL, GUEST_PHI_PA, page.data(), page.size(), &done, nullptr) ==
          TOOLHOST_OK);
  REQUIRE(done == page.size());
  CHECK(std::memcmp(page.data(), GUEST_PHI_SIG, 16) == 0);
  const std::vector<uint8_t> live = guest.gdb_physical(GUEST_PHI_PA, GUEST_PHI_LEN);
  CHECK(live == page);
  t->close(t);

  // With qmp=none only the RAM below 2 GiB is known, and the error says how to get the rest.
  toolhost_debug_target_t* low = open_target(pid + ",qmp=none", &error);
  REQUIRE(low != nullptr);
  std::string why;
  toolhost_writer_t e{&why, w.write};
  CHECK(low->read_memory(low, TOOLHOST_DT_PHYSICAL, GUEST_PHI_PA, page.data(), 16, &done, &e) ==
        TOOLHOST_ERR_NOT_FOUND);
  CHECK(why.find("qmp=") != std::string::npos);
  low->close(low);
}

TEST_CASE("the memory backend names what is wrong with its input", "[memory]") {
  std::string error;
  CHECK(open_target("pid=abc", &error) == nullptr);
  CHECK(error.find("pid=\"abc\" is not a number") != std::string::npos);
  CHECK(open_target("color=blue", &error) == nullptr);
  CHECK(error.find("unknown memory backend option \"color\"") != std::string::npos);
  CHECK(open_target("pid=999999999", &error) == nullptr);
  CHECK(error.find("/proc/999999999/maps") != std::string::npos);
  CHECK(open_target("pid=" + std::to_string(::getpid()) + ",qmp=/nonexistent/qmp.sock", &error) == nullptr);
  CHECK(error.find("cannot connect to QMP at /nonexistent/qmp.sock") != std::string::npos);
}

TEST_CASE("QEMU command lines and /proc maps are parsed", "[memory]") {
  CHECK(mb::ram_size_from_cmdline({"qemu-system-x86_64", "-m", "256M"}) == 256ull << 20);
  CHECK(mb::ram_size_from_cmdline({"qemu-system-x86_64", "-m", "size=4608M,slots=2"}) == 4608ull << 20);
  CHECK(mb::ram_size_from_cmdline({"qemu-system-x86_64", "-m", "2G"}) == 2ull << 30);
  CHECK(mb::ram_size_from_cmdline({"qemu-system-x86_64", "-m", "512"}) == 512ull << 20);
  CHECK(mb::ram_size_from_cmdline({"qemu-system-x86_64"}) == 0);
  CHECK(mb::qmp_socket_from_cmdline({"qemu-system-x86_64", "-qmp", "unix:/tmp/q.sock,server=on,wait=off"}) ==
        "/tmp/q.sock");
  CHECK(mb::qmp_socket_from_cmdline({"qemu-system-x86_64", "-qmp", "unix:/tmp/q.sock"}) == "/tmp/q.sock");
  CHECK(mb::qmp_socket_from_cmdline({"qemu-system-x86_64", "-qmp", "tcp:127.0.0.1:4444,server"}) == "");
  const auto maps = mb::parse_maps(
      "7f0000000000-7f0010000000 rw-p 00000000 00:00 0 \n"
      "7f1000000000-7f1000001000 r--p 00000000 08:01 123 /usr/lib/x.so\n"
      "7f2000000000-7f2020000000 rw-s 00000000 00:05 77 /dev/shm/guest-ram\n");
  REQUIRE(maps.size() == 3);
  auto exact = mb::find_ram_mapping(maps, 0x20000000);
  REQUIRE(exact.ok());
  CHECK(exact->start == 0x7f2000000000);
  auto none = mb::find_ram_mapping(maps, 0x40000000);
  REQUIRE_FALSE(none.ok());
  CHECK(std::string(none.status().message()).find("no read-write mapping") != std::string::npos);
}
