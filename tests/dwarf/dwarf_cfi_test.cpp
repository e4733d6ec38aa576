// The CFI bound (plugins/common/dwarf/cfi_check.hpp) at the library: .eh_frame sections built
// here byte by byte in a well-formed ELF image, unwound through module_debug::unwind_step.
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include <toolhost/dwarf/module_debug.hpp>

#include "elf_image.hpp"

namespace {

using namespace toolhost;

constexpr uint64_t kEhFrame = 0x2000;   // .eh_frame's address in the image
constexpr uint64_t kFunction = 0x1000;  // the function the FDE covers, 0x100 bytes

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>(v >> (8 * i));
}
void put_uleb(std::string& out, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    out += static_cast<char>(v != 0 ? b | 0x80 : b);
  } while (v != 0);
}

// An entry that libdw cannot read but can skip (an FDE whose CIE pointer points before the
// section), then GCC's x86-64 CIE ("zR", pc-relative sdata4) and one FDE for kFunction whose
// instructions are `fde_instructions`. `version` is the CIE's version byte.
std::string eh_frame(const std::string& fde_instructions, uint8_t version = 1) {
  std::string out;
  put_u32(out, 8);
  put_u32(out, 0x00fe0000);  // CIE pointer far before the section
  put_u32(out, 0);
  const size_t cie = out.size();
  std::string body;
  put_u32(body, 0);  // CIE id
  body += static_cast<char>(version);
  body += std::string("zR\0", 3);
  put_uleb(body, 1);       // code alignment
  body += '\x78';          // data alignment -8
  put_uleb(body, 16);      // return address: rip
  put_uleb(body, 1);       // augmentation data length
  body += '\x1b';          // FDE addresses pc-relative sdata4
  body += "\x0c\x07\x08";  // DW_CFA_def_cfa rsp+8
  body += "\x90\x01";      // DW_CFA_offset rip at cfa-8
  while ((body.size() + 4) % 8 != 0) body += '\0';
  put_u32(out, static_cast<uint32_t>(body.size()));
  out += body;
  const size_t fde = out.size();
  body.clear();
  put_u32(body, static_cast<uint32_t>(fde + 4 - cie));  // CIE pointer
  const uint64_t field = kEhFrame + fde + 8;
  put_u32(body, static_cast<uint32_t>(kFunction - field));
  put_u32(body, 0x100);
  put_uleb(body, 0);  // augmentation data length
  body += fde_instructions;
  while ((body.size() + 4) % 8 != 0) body += '\0';
  put_u32(out, static_cast<uint32_t>(body.size()));
  out += body;
  put_u32(out, 0);  // terminator
  return out;
}

std::unique_ptr<dwarf::module_debug> module_with(const std::string& cfi) {
  auto m = dwarf::module_debug::open_image("cfi", testing::make_elf_image({{".eh_frame", cfi, kEhFrame}}, 0x100000), 0);
  REQUIRE(m.ok());
  return std::move(*m);
}

std::optional<dwarf::unwind_result> step(const dwarf::module_debug& m) {
  dwarf::dwarf_registers regs;
  for (int r = 0; r < dwarf::dwarf_registers::kCount; ++r) regs.value[r] = 0x7f0000080000ull + 8 * r;
  regs.value[16] = kFunction + 0x10;
  const dwarf::memory_reader memory = [](uint64_t address, int) -> std::optional<uint64_t> { return address ^ 0x5555; };
  return m.unwind_step(*regs.value[16], true, regs, memory);
}

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// DW_CFA_GNU_negative_offset_extended naming `reg`, offset 2.
std::string negative_offset(uint64_t reg) {
  std::string s = "\x2f";
  put_uleb(s, reg);
  put_uleb(s, 2);
  return s;
}

}  // namespace

TEST_CASE("CFI naming ordinary registers unwinds, past an entry libdw skips") {
  auto m = module_with(eh_frame(negative_offset(6)));
  auto r = step(*m);
  REQUIRE(r.has_value());
  const uint64_t rsp = 0x7f0000080000ull + 8 * 7;
  CHECK(r->cfa == rsp + 8);
  REQUIRE(r->caller.value[16].has_value());
  CHECK(*r->caller.value[16] == ((rsp + 8 - 8) ^ 0x5555));
}

TEST_CASE("the highest register number allowed is 1023") {
  CHECK(step(*module_with(eh_frame(negative_offset(1023)))).has_value());
  CHECK_FALSE(step(*module_with(eh_frame(negative_offset(1024)))).has_value());
}

TEST_CASE("fuzz_dwarf_cfi's register 242514544 is refused without libdw's 1.94 GB table") {
  const long before = peak_rss_kb();
  auto m = module_with(eh_frame(negative_offset(242514544)));
  CHECK_FALSE(step(*m).has_value());
  CHECK(peak_rss_kb() - before < 256 * 1024);
}

TEST_CASE("a CIE version outside the specifications is refused") {
  CHECK(step(*module_with(eh_frame("", 1))).has_value());
  CHECK(step(*module_with(eh_frame("", 3))).has_value());
  CHECK_FALSE(step(*module_with(eh_frame("", 2))).has_value());  // laid out as version 1
}
