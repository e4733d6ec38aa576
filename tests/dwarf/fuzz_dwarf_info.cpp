// libFuzzer: hostile DWARF (.debug_info, .debug_abbrev, .debug_line, strings, location and range
// lists) in a well-formed ELF image, read as the debugger reads it: the functions and line at a
// pc, the variables in scope (location expressions evaluated over registers and memory that
// answer for any address), tail-call chains, and every named type made and shown by dt.
// Input: u8 pc count (at most 8), that many u32 pcs, then sections as (u8 kind, u32 length, bytes).
#include <cstdint>
#include <cstring>

#include <toolhost/dwarf/module_debug.hpp>
#include <toolhost/types/dt.hpp>

#include "elf_image.hpp"
#include "fuzz_input.hpp"

namespace {

const char* const kSections[] = {".debug_info",        ".debug_abbrev",   ".debug_line",     ".debug_str",
                                 ".debug_line_str",    ".debug_loclists", ".debug_rnglists", ".debug_addr",
                                 ".debug_str_offsets", ".debug_ranges",   ".debug_loc"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace toolhost;
  testing::fuzz_input in(data, size);
  std::vector<uint32_t> pcs(in.u8() % 9);
  for (auto& pc : pcs) pc = in.u32() & 0xfffff;
  std::vector<testing::elf_section> sections{{".text", std::string(0x100, '\xc3'), 0x1000}};
  bool seen[std::size(kSections)] = {};
  while (!in.done()) {
    const uint8_t kind = in.u8() % std::size(kSections);
    std::string bytes = in.bytes(in.u32());
    if (seen[kind]) continue;
    seen[kind] = true;
    sections.push_back({kSections[kind], std::move(bytes), 0});
  }
  auto m = dwarf::module_debug::open_image("fuzz", testing::make_elf_image(sections, 0x100000), 0);
  if (!m.ok()) return 0;
  const dwarf::memory_reader memory = [](uint64_t address, int) -> std::optional<uint64_t> {
    if (address < 0x7f0000000000ull || address > 0x7f0000100000ull) return std::nullopt;
    return address * 0x9e3779b97f4a7c15ull >> 17;
  };
  dwarf::frame_view caller;
  caller.pc = 0x1040;
  caller.activation = false;
  for (int r = 0; r < dwarf::dwarf_registers::kCount; ++r) caller.regs.value[r] = 0x7f0000080000ull + 8 * r;
  for (uint32_t pc : pcs) {
    (void)(*m)->functions_at(pc);
    (void)(*m)->line_at(pc);
    (void)(*m)->tail_calls(pc, 0x1000);
    dwarf::frame_view frame = caller;
    frame.pc = pc;
    frame.activation = true;
    frame.caller = &caller;
    frame.caller_module = m->get();
    for (size_t depth = 0; depth < 3; ++depth) {
      frame.inline_depth = depth;
      (void)(*m)->variables(frame, memory);
    }
  }
  if (const types::type_table* table = (*m)->types()) {
    size_t shown = 0;
    table->for_each_named([&](std::string_view name, types::type_id id) {
      types::dt_request r{*table, id, std::string(name)};
      r.address = 0x7f0000080000ull;
      r.read = [](uint64_t address, std::span<uint8_t> out) -> size_t {
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>((address + i) * 131);
        return out.size();
      };
      r.options.depth = 2;
      r.options.max_lines = 200;
      (void)types::render_dt(r);
      (void)types::render_value(r);
      (void)types::c_type_name(*table, id);
      return ++shown < 64;
    });
  }
  return 0;
}
