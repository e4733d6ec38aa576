// The page walker over a small fake physical memory.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <toolhost/paging/page_walk.hpp>

namespace paging = toolhost::paging;

namespace {

struct fake_memory {
  std::map<uint64_t, std::vector<uint8_t>> pages;  // page address -> 4 KiB
  void set(uint64_t pa, uint64_t value) {
    auto& p = pages[pa & ~0xfffull];
    p.resize(0x1000);
    std::memcpy(p.data() + (pa & 0xfff), &value, 8);
  }
  paging::read_physical_fn reader() {
    return [this](uint64_t pa, std::span<uint8_t> out) {
      for (size_t i = 0; i < out.size(); ++i) {
        auto it = pages.find((pa + i) & ~0xfffull);
        if (it == pages.end()) return absl::NotFoundError("absent");
        out[i] = it->second[(pa + i) & 0xfff];
      }
      return absl::OkStatus();
    };
  }
};

}  // namespace

TEST_CASE("the walk follows 4 KiB, 2 MiB and 1 GiB leaves with effective rights", "[paging]") {
  fake_memory m;
  // CR3 0x1000 (with PCID bits set, which the walk ignores).
  m.set(0x1000 + 8 * 1, 0x2000 | 0x7);                    // PML4[1] user, writable
  m.set(0x2000 + 8 * 0, 0x3000 | 0x7);                    // PDPT[0] -> PD
  m.set(0x2000 + 8 * 2, 0x80000000ull | 0x81);            // PDPT[2] 1 GiB, read-only, supervisor
  m.set(0x3000 + 8 * 0, 0x4000 | 0x5);                    // PD[0] -> PT, read-only
  m.set(0x3000 + 8 * 3, 0x600000 | 0x87 | (1ull << 63));  // PD[3] 2 MiB, NX
  m.set(0x4000 + 8 * 5, 0x9000 | 0x7);                    // PT[5] -> 0x9000
  m.pages[0x9000].assign(0x1000, 0xab);
  const uint64_t cr3 = 0x1000 | 0x5;
  const uint64_t base = 1ull << 39;

  auto small = paging::translate(cr3, base + 0x5123, m.reader());
  REQUIRE(small.ok());
  CHECK(small->physical == 0x9123);
  CHECK(small->page_size == 0x1000);
  CHECK(small->levels == 4);
  CHECK_FALSE(small->writable);  // the PD entry forbids writes
  CHECK(small->user);

  auto large = paging::translate(cr3, base + 3 * 0x200000 + 0x1234, m.reader());
  REQUIRE(large.ok());
  CHECK(large->physical == 0x601234);
  CHECK(large->page_size == 0x200000);
  CHECK(large->no_execute);
  CHECK(large->levels == 3);

  auto huge = paging::translate(cr3, base + 2 * 0x40000000ull + 0x12345678, m.reader());
  REQUIRE(huge.ok());
  CHECK(huge->physical == 0x80000000ull + 0x12345678);
  CHECK(huge->page_size == 0x40000000);
  CHECK_FALSE(huge->user);
  CHECK(huge->levels == 2);
}

TEST_CASE("the walk names the level that is missing and refuses non-canonical addresses", "[paging]") {
  fake_memory m;
  m.set(0x1000, 0x2000 | 0x3);
  m.pages[0x2000].resize(0x1000);
  auto no_pdpte = paging::translate(0x1000, 0x40000000, m.reader());
  REQUIRE_FALSE(no_pdpte.ok());
  CHECK(no_pdpte.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(no_pdpte.status().message()).find("PDPTE") != std::string::npos);
  auto no_pml4e = paging::translate(0x1000, 0xffff800000000000, m.reader());
  REQUIRE_FALSE(no_pml4e.ok());
  CHECK(std::string(no_pml4e.status().message()).find("PML4E") != std::string::npos);
  auto odd = paging::translate(0x1000, 0x0000800000000000, m.reader());
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.status().code() == absl::StatusCode::kInvalidArgument);
  auto unreadable = paging::translate(0x7000, 0, m.reader());
  REQUIRE_FALSE(unreadable.ok());
  CHECK(std::string(unreadable.status().message()).find("cannot read the PML4E") != std::string::npos);
}

TEST_CASE("virtual reads cross pages and stop at the first unmapped one", "[paging]") {
  fake_memory m;
  m.set(0x1000, 0x2000 | 3);
  m.set(0x2000, 0x3000 | 3);
  m.set(0x3000, 0x4000 | 3);
  m.set(0x4000 + 8 * 0, 0x8000 | 3);
  m.set(0x4000 + 8 * 1, 0x6000 | 3);  // non-contiguous physical pages
  m.pages[0x8000].assign(0x1000, 0x11);
  m.pages[0x6000].assign(0x1000, 0x22);
  std::vector<uint8_t> out(0x3000);
  auto n = paging::read_virtual(0x1000, 0xff0, out, m.reader());
  REQUIRE(n.ok());
  CHECK(*n == 0x1010);  // to the end of the second page; the third is unmapped
  CHECK(out[0] == 0x11);
  CHECK(out[0xf] == 0x11);
  CHECK(out[0x10] == 0x22);
  auto none = paging::read_virtual(0x1000, 0x2000, out, m.reader());
  CHECK_FALSE(none.ok());
}
