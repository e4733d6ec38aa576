// libFuzzer: hostile CFI (.eh_frame, and the same bytes as .debug_frame) in a well-formed ELF
// image, unwound through module_debug::unwind_step as the stack walker drives it: at most 16
// steps from each of four pcs, with registers and stack memory that answer for any address.
// Input: u32 .eh_frame address (bit 31: also as .debug_frame), 4 x u32 pcs, the section bytes.
#include <cstdint>

#include <toolhost/dwarf/module_debug.hpp>

#include "elf_image.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace toolhost;
  testing::fuzz_input in(data, size);
  const uint32_t where = in.u32();
  uint32_t pcs[4];
  for (auto& pc : pcs) pc = in.u32() & 0xfffff;
  const std::string cfi = in.rest();
  const uint64_t eh_address = 0x1000 + (where & 0x7ffff);
  std::vector<testing::elf_section> sections{{".eh_frame", cfi, eh_address}};
  if (where & 0x80000000u) sections.push_back({".debug_frame", cfi, 0});
  auto m = dwarf::module_debug::open_image("fuzz", testing::make_elf_image(sections, 0x100000), 0);
  if (!m.ok()) return 0;
  // Stack memory: a word derived from its address, so that a rule reading it gets an answer.
  const dwarf::memory_reader memory = [](uint64_t address, int) -> std::optional<uint64_t> {
    if (address < 0x7f0000000000ull || address > 0x7f0000100000ull) return std::nullopt;
    return address * 0x9e3779b97f4a7c15ull >> 17;
  };
  for (uint32_t pc : pcs) {
    dwarf::dwarf_registers regs;
    for (int r = 0; r < dwarf::dwarf_registers::kCount; ++r) regs.value[r] = 0x7f0000080000ull + 8 * r;
    regs.value[16] = pc;
    bool activation = true;
    for (int step = 0; step < 16; ++step) {
      auto next = (*m)->unwind_step(*regs.value[16], activation, regs, memory);
      if (!next || !next->caller.value[16]) break;
      regs = next->caller;
      activation = next->signal_frame;
    }
    (void)(*m)->functions_at(pc);
    (void)(*m)->line_at(pc);
  }
  return 0;
}
