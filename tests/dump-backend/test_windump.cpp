// Windows crash dumps: every layout the generator writes opens and reads correctly, and
// truncated or perturbed files give errors that name the problem.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>

#include <toolhost/paging/page_walk.hpp>
#include <toolhost/windump/dump_reader.hpp>
#include <toolhost/windump/dump_writer.hpp>

#include "windump_generator.hpp"

using toolhost::windump::dump_reader;
namespace t = toolhost::test;

namespace {

toolhost::paging::read_physical_fn physical_of(const dump_reader& r) {
  return [&r](uint64_t pa, std::span<uint8_t> out) { return r.read_physical_exact(pa, out); };
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  auto r = dump_reader::parse(bytes);
  return r.ok() ? std::string() : std::string(r.status().message());
}

}  // namespace

TEST_CASE("each Windows dump type opens and reads physical and virtual memory", "[windump]") {
  const uint32_t type = GENERATE(1u, 5u, 6u, 8u, 9u, 10u);
  CAPTURE(type);
  const t::dump_spec spec = t::sample_system(type);
  const std::vector<uint8_t> bytes = t::generate_dump(spec);
  auto reader = dump_reader::parse(bytes);
  REQUIRE(reader.ok());
  const auto& h = reader->header();
  CHECK(h.dump_type == type);
  CHECK(h.directory_table_base == 0x1000);
  CHECK(h.ps_loaded_module_list == spec.ps_loaded_module_list);
  CHECK(h.ps_active_process_head == spec.ps_active_process_head);
  CHECK(h.kd_debugger_data_block == spec.kd_debugger_data_block);
  CHECK(h.bugcheck_code == 0xd1);
  CHECK(h.bugcheck_parameters[3] == 0xfffff80000010123);
  CHECK(h.number_processors == 2);
  CHECK(h.comment == "toolhost test dump");
  CHECK(h.context.rip == spec.context.rip);
  CHECK(h.context.rsp == spec.context.rsp);
  CHECK(h.context.r15 == 15);
  CHECK(h.context.eflags == 0x246);
  CHECK(h.context.cs == 0x10);
  CHECK(reader->present_pages() == spec.pages.size());

  // Every stored page reads back, byte for byte.
  for (const auto& [pfn, page] : spec.pages) {
    std::vector<uint8_t> got(0x1000);
    REQUIRE(reader->read_physical(pfn * 0x1000, got) == 0x1000);
    CHECK(got == page);
  }
  // A read across two present neighbours (0x205, 0x206) goes through; into an absent page it
  // stops at the boundary.
  std::vector<uint8_t> two(0x2000);
  CHECK(reader->read_physical(0x205000, two) == 0x2000);
  CHECK(two[0x1000] == t::sample_byte(0x206000));
  std::vector<uint8_t> over(0x2000);
  CHECK(reader->read_physical(0x206800, over) == 0x800);
  CHECK(reader->read_physical(0x300000, over) == 0);
  CHECK_FALSE(reader->read_physical_exact(0x300000, over).ok());

  // Virtual addresses through the 4 KiB, 2 MiB and 1 GiB mappings.
  const auto read = physical_of(*reader);
  struct probe {
    uint64_t va, pa, page;
    bool nx;
  };
  for (const probe p :
       {probe{t::kVa4K + 0x123, 0x10123, 0x1000, false}, probe{t::kVa2M + 0x5abc, 0x205abc, 0x200000, true},
        probe{t::kVa1G + 0x7010, 0x40007010, 0x40000000, false}}) {
    auto tr = toolhost::paging::translate(h.directory_table_base, p.va, read);
    REQUIRE(tr.ok());
    CHECK(tr->physical == p.pa);
    CHECK(tr->page_size == p.page);
    CHECK(tr->no_execute == p.nx);
    uint8_t b[16];
    auto n = toolhost::paging::read_virtual(h.directory_table_base, p.va, b, read);
    REQUIRE(n.ok());
    CHECK(*n == 16);
    for (int k = 0; k < 16; ++k) CHECK(b[k] == t::sample_byte(p.pa + k));
  }
}

TEST_CASE("truncated Windows dumps give clear errors and never crash", "[windump]") {
  const uint32_t type = GENERATE(1u, 5u, 6u, 8u, 9u, 10u);
  const bool declared_size = GENERATE(true, false);
  CAPTURE(type, declared_size);
  t::dump_spec spec = t::sample_system(type);
  spec.required_dump_space = declared_size;
  const std::vector<uint8_t> full = t::generate_dump(spec);
  std::set<size_t> cuts = {0,
                           1,
                           4,
                           0x30,
                           0x1000,
                           0x1fff,
                           0x2000,
                           0x2008,
                           0x2030,
                           0x2037,
                           0x2038,
                           0x2040,
                           0x3000,
                           full.size() - 0x1001,
                           full.size() - 0x1000,
                           full.size() - 1};
  for (size_t cut : cuts) {
    CAPTURE(cut);
    std::vector<uint8_t> part(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    const std::string error = parse_error(part);
    REQUIRE_FALSE(error.empty());
    CHECK((error.find("truncated Windows dump") != std::string::npos ||
           error.find("bad Windows dump") != std::string::npos));
  }
}

TEST_CASE("a Windows dump that holds no physical memory is refused with the field at fault", "[windump]") {
  std::vector<uint8_t> full = t::generate_dump(t::sample_system(1));
  auto put = [&](uint64_t at, uint64_t value, size_t size) { std::memcpy(full.data() + at, &value, size); };
  put(0x088, 0, 4);  // PhysicalMemoryBlock.NumberOfRuns
  put(0x090, 0, 8);  // PhysicalMemoryBlock.NumberOfPages
  CHECK(parse_error(full) ==
        "bad Windows dump: PhysicalMemoryBlock.NumberOfRuns is 0: the dump holds no physical memory, so there is "
        "nothing to debug in it");

  t::dump_spec bitmap = t::sample_system(5);
  bitmap.pages.clear();
  CHECK(parse_error(t::generate_dump(bitmap)) ==
        "bad Windows dump: bitmap header TotalPresentPages is 0: the dump holds no physical memory, so there is "
        "nothing to debug in it");
}

TEST_CASE("every header field perturbed gives a clear error or a correct read", "[windump]") {
  const uint32_t type = GENERATE(1u, 5u, 6u, 8u, 9u, 10u);
  CAPTURE(type);
  const t::dump_spec spec = t::sample_system(type);
  const std::vector<uint8_t> good = t::generate_dump(spec);
  // Fields the reader only reports: any value opens, and the value shows.
  const std::set<std::string> informational = {"MajorVersion",
                                               "MinorVersion",
                                               "DirectoryTableBase",
                                               "PfnDatabase",
                                               "PsLoadedModuleList",
                                               "PsActiveProcessHead",
                                               "BugCheckCode",
                                               "BugCheckParameter1",
                                               "BugCheckParameter4",
                                               "KdDebuggerDataBlock",
                                               "ContextRecord.Rip",
                                               "ContextRecord.Rsp",
                                               "Exception.ExceptionCode",
                                               "SystemTime",
                                               "Comment",
                                               "SystemUpTime"};
  for (const t::header_field& f : t::header_fields(type)) {
    for (const uint64_t value : {0ull, ~0ull, 0x8000000000000000ull, 0x7fffull, 0x1ull}) {
      CAPTURE(f.name, f.offset, value);
      std::vector<uint8_t> bytes = good;
      std::memcpy(bytes.data() + f.offset, &value, f.size);
      if (std::memcmp(bytes.data() + f.offset, good.data() + f.offset, f.size) == 0) continue;
      auto r = dump_reader::parse(bytes);
      if (informational.count(f.name) != 0) {
        REQUIRE(r.ok());
        if (std::string(f.name) == "PsLoadedModuleList") CHECK(r->header().ps_loaded_module_list == value);
        if (std::string(f.name) == "KdDebuggerDataBlock") CHECK(r->header().kd_debugger_data_block == value);
        if (std::string(f.name) == "BugCheckCode") CHECK(r->header().bugcheck_code == static_cast<uint32_t>(value));
        if (std::string(f.name) == "ContextRecord.Rip") CHECK(r->header().context.rip == value);
        continue;
      }
      if (r.ok()) {
        // A structural value that still describes a consistent file: every read stays in bounds.
        std::vector<uint8_t> page(0x1000);
        for (const auto& run : r->runs()) {
          for (uint64_t p = 0; p < std::min<uint64_t>(run.page_count, 4); ++p)
            r->read_physical((run.first_page + p) * 0x1000, page);
        }
        continue;
      }
      const std::string error(r.status().message());
      if (value == ~0ull && std::string(f.name) != "bitmap") {
        CHECK(error.find(f.name) != std::string::npos);
      }
      CHECK((error.find("truncated Windows dump") == 0 || error.find("bad Windows dump") == 0));
    }
  }
}

TEST_CASE("the full-dump writer's files read back", "[windump]") {
  // A sparse physical memory: pages present where sample_system has them, others unreadable.
  const t::dump_spec source = t::sample_system(1);
  toolhost::windump::full_dump_request q;
  q.ranges = {{0x1000, 0x4000}, {0x10000, 0x1000}, {0x205000, 0x2000}, {0x40007000, 0x1000}, {0x90000, 0x1000}};
  q.directory_table_base = 0x1000;
  q.ps_loaded_module_list = 0xfffff80000012000;
  q.kd_debugger_data_block = 0xfffff80000014000;
  q.number_processors = 4;
  q.context.rip = 0xfffff80000010123;
  q.context.rsp = 0xfffff80000011e00;
  q.context.r13 = 0x1313;
  q.context.eflags = 0x202;
  q.comment = "written by toolhost";
  const std::string path = "/tmp/toolhost-windump-writer-" + std::to_string(::getpid()) + ".dmp";
  auto result = toolhost::windump::write_full_dump(path, q, [&](uint64_t pa, std::span<uint8_t> page) {
    auto it = source.pages.find(pa / 0x1000);
    if (it == source.pages.end()) return absl::NotFoundError("absent");
    std::memcpy(page.data(), it->second.data(), 0x1000);
    return absl::OkStatus();
  });
  REQUIRE(result.ok());
  CHECK(result->pages_written == 4 + 1 + 2 + 1 + 1);
  CHECK(result->pages_unreadable == 1);  // 0x90000

  FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::vector<uint8_t> bytes(result->bytes);
  REQUIRE(std::fread(bytes.data(), 1, bytes.size(), f) == bytes.size());
  CHECK(std::fgetc(f) == EOF);
  std::fclose(f);
  std::remove(path.c_str());

  auto r = dump_reader::parse(bytes);
  REQUIRE(r.ok());
  CHECK(r->header().dump_type == 1);
  CHECK(r->header().number_processors == 4);
  CHECK(r->header().context.rip == 0xfffff80000010123);
  CHECK(r->header().context.r13 == 0x1313);
  CHECK(r->header().comment == "written by toolhost");
  CHECK(r->header().kd_debugger_data_block == 0xfffff80000014000);
  uint8_t b[8];
  auto n = toolhost::paging::read_virtual(0x1000, t::kVa1G + 0x7008, b, physical_of(*r));
  REQUIRE(n.ok());
  for (int k = 0; k < 8; ++k) CHECK(b[k] == t::sample_byte(0x40007008 + k));
  std::vector<uint8_t> zero(0x1000, 1);
  REQUIRE(r->read_physical(0x90000, zero) == 0x1000);
  CHECK(std::all_of(zero.begin(), zero.end(), [](uint8_t v) { return v == 0; }));
  CHECK(r->read_physical(0x91000, zero) == 0);
}

TEST_CASE("the full-dump writer refuses what a full dump cannot describe", "[windump]") {
  toolhost::windump::full_dump_request q;
  auto ok_page = [](uint64_t, std::span<uint8_t>) { return absl::OkStatus(); };
  const std::string path = "/tmp/toolhost-windump-refused-" + std::to_string(::getpid()) + ".dmp";
  auto none = toolhost::windump::write_full_dump(path, q, ok_page);
  REQUIRE_FALSE(none.ok());
  CHECK(std::string(none.status().message()).find("no physical memory ranges") != std::string::npos);
  // 44 separate pages: the header holds 42 runs, so the two smallest holes are saved as zeros.
  for (uint64_t i = 0; i < 44; ++i) q.ranges.push_back({i * 0x10000 + (i == 7 || i == 30 ? 0xe000 : 0), 0x1000});
  auto many = toolhost::windump::write_full_dump(path, q, [](uint64_t pa, std::span<uint8_t> page) {
    if ((pa & 0xffff) != 0 && (pa & 0xffff) != 0xe000) return absl::NotFoundError("hole");
    std::fill(page.begin(), page.end(), 0x5a);
    return absl::OkStatus();
  });
  REQUIRE(many.ok());
  CHECK(many->pages_written == 44 + 1 + 1);  // the one-page holes at 0x7f000 and 0x1ef000
  CHECK(many->pages_unreadable == 2);
  std::remove(path.c_str());
  q.ranges.resize(2);
  int calls = 0;
  auto cancelled = toolhost::windump::write_full_dump(path, q, ok_page, [&] { return ++calls > 1; });
  REQUIRE_FALSE(cancelled.ok());
  CHECK(cancelled.status().code() == absl::StatusCode::kCancelled);
  CHECK(std::fopen(path.c_str(), "rb") == nullptr);
  CHECK(std::fopen((path + ".partial").c_str(), "rb") == nullptr);
}
