// The dump backend's debug-target session over Windows dumps, and `.dump /f` (dump_target)
// round trips: a dump of a dump reads back the same memory, registers and hints.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

#include <toolhost/windump/dump_reader.hpp>
#include <toolhost/windump/target_dump.hpp>

#include <toolhost/snapshot/session.hpp>
#include "open_dump.hpp"
#include "windump_generator.hpp"

namespace db = toolhost::dump_backend;
namespace t = toolhost::test;

namespace {

std::string temp_path(const std::string& name) { return "/tmp/toolhost-" + std::to_string(::getpid()) + "-" + name; }

void save(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  std::fclose(f);
}

std::string text_of(void (*fn)(toolhost_debug_target_t*, toolhost_writer_t*), toolhost_debug_target_t* target) {
  std::string s;
  toolhost_writer_t w{&s, [](void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }};
  fn(target, &w);
  return s;
}

toolhost_debug_target_t* open_or_fail(const std::string& path) {
  auto snap = db::open_dump(path);
  INFO((snap.ok() ? std::string() : std::string(snap.status().message())));
  REQUIRE(snap.ok());
  return toolhost::snapshots::make_target(std::move(*snap));
}

}  // namespace

TEST_CASE("a Windows dump as a debug target: hints, registers, memory, refusals", "[dump]") {
  const uint32_t type = GENERATE(1u, 5u, 10u);
  const std::string path = temp_path("target.dmp");
  save(path, t::generate_dump(t::sample_system(type)));
  toolhost_debug_target_t* target = open_or_fail(path);
  const std::string d = text_of(target->describe, target);
  CHECK(d.find("\"os\":\"windows\"") != std::string::npos);
  CHECK(d.find("\"dtb\":\"0x1000\"") != std::string::npos);
  CHECK(d.find("\"module_list_head\":\"0xfffff80000012000\"") != std::string::npos);
  CHECK(d.find("\"kd_debugger_data_block\":\"0xfffff80000014000\"") != std::string::npos);
  CHECK(d.find("\"bugcheck\":{\"code\":\"0xd1\"") != std::string::npos);
  CHECK(d.find("\"role\":\"pc\"") != std::string::npos);
  CHECK(d.find("\"kernel_base\":\"0xfffff80000400000\"") != std::string::npos);
  CHECK((target->capabilities(target) & TOOLHOST_DT_CAP_MODULES) != 0);
  const std::string modules = text_of(target->list_modules, target);
  CHECK(modules ==
        "[{\"name\":\"ntoskrnl.exe\",\"path\":\"\\\\SystemRoot\\\\system32\\\\ntoskrnl.exe\",\"base\":"
        "\"0xfffff80000400000\","
        "\"size\":\"0xa00000\"},{\"name\":\"hal.dll\",\"path\":\"\\\\SystemRoot\\\\system32\\\\hal.dll\","
        "\"base\":\"0xfffff80000e00000\",\"size\":\"0x80000\"}]");

  uint64_t regs[32] = {};
  size_t done = 0;
  REQUIRE(target->read_registers(target, -1, regs, sizeof regs, &done, nullptr) == TOOLHOST_OK);
  CHECK(regs[16] == 0xfffff80000010123);  // rip is the 17th register of the map
  CHECK(regs[7] == 0xfffff80000011e00);   // rsp

  uint8_t b[4];
  REQUIRE(target->read_memory(target, TOOLHOST_DT_VIRTUAL, t::kVa2M + 0x6001, b, 4, &done, nullptr) == TOOLHOST_OK);
  CHECK(b[0] == t::sample_byte(0x206001));
  std::string why;
  toolhost_writer_t e{&why, [](void* c, const char* s, size_t n) { static_cast<std::string*>(c)->append(s, n); }};
  CHECK(target->read_memory(target, TOOLHOST_DT_PHYSICAL, 0x300000, b, 4, &done, &e) == TOOLHOST_ERR_NOT_FOUND);
  CHECK(why.find("not in the dump") != std::string::npos);
  CHECK(target->write_memory(target, TOOLHOST_DT_PHYSICAL, 0x10000, b, 4, nullptr) == TOOLHOST_ERR_UNSUPPORTED);
  CHECK(target->set_breakpoint(target, TOOLHOST_DT_BP_SOFTWARE, t::kVa4K, 1, nullptr) == TOOLHOST_ERR_UNSUPPORTED);
  toolhost_dt_stop_t stop{};
  stop.struct_size = sizeof stop;
  REQUIRE(target->wait_stop(target, 0, &stop, nullptr) == TOOLHOST_OK);
  CHECK(stop.reason == TOOLHOST_DT_STOP_BUGCHECK);
  CHECK(stop.code == 0xd1);
  CHECK(target->wait_stop(target, 0, &stop, nullptr) == TOOLHOST_ERR_UNSUPPORTED);
  target->close(target);
  std::remove(path.c_str());
}

TEST_CASE(".dump /f of a dump reads back the same memory, registers and hints", "[dump][writer]") {
  const uint32_t type = GENERATE(1u, 6u, 9u);
  const std::string source = temp_path("source.dmp");
  const std::string copy = temp_path("copy.dmp");
  const t::dump_spec spec = t::sample_system(type);
  save(source, t::generate_dump(spec));
  toolhost_debug_target_t* original = open_or_fail(source);
  toolhost::windump::target_dump_options options;
  options.comment = ".dump /f test";
  auto written = toolhost::windump::dump_target(original, copy, options);
  INFO((written.ok() ? std::string() : std::string(written.status().message())));
  REQUIRE(written.ok());
  CHECK(written->pages_unreadable == 0);
  CHECK(written->pages_written == spec.pages.size());
  original->close(original);

  toolhost_debug_target_t* again = open_or_fail(copy);
  const std::string d = text_of(again->describe, again);
  CHECK(d.find("\"dump_type\":1") != std::string::npos);
  CHECK(d.find("\"dtb\":\"0x1000\"") != std::string::npos);
  CHECK(d.find("\"module_list_head\":\"0xfffff80000012000\"") != std::string::npos);
  CHECK(d.find("\"bugcheck\":{\"code\":\"0xd1\"") != std::string::npos);
  CHECK(d.find(".dump /f test") != std::string::npos);
  for (const auto& [pfn, page] : spec.pages) {
    std::vector<uint8_t> got(0x1000);
    size_t done = 0;
    REQUIRE(again->read_memory(again, TOOLHOST_DT_PHYSICAL, pfn * 0x1000, got.data(), got.size(), &done, nullptr) ==
            TOOLHOST_OK);
    CHECK(got == page);
  }
  uint64_t regs[32] = {};
  size_t done = 0;
  REQUIRE(again->read_registers(again, -1, regs, sizeof regs, &done, nullptr) == TOOLHOST_OK);
  CHECK(regs[16] == spec.context.rip);
  CHECK(regs[15] == spec.context.r15);
  again->close(again);
  std::remove(source.c_str());
  std::remove(copy.c_str());
}
