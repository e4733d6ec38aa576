// libFuzzer: any bytes into the Windows dump reader; whatever it accepts must read in bounds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <toolhost/paging/page_walk.hpp>
#include <toolhost/windump/dump_reader.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto reader = toolhost::windump::dump_reader::parse({data, size});
  if (!reader.ok()) return 0;
  std::vector<uint8_t> page(0x1800);
  int budget = 64;
  for (const auto& run : reader->runs()) {
    if (--budget < 0) break;
    reader->read_physical(run.first_page * 0x1000 + 0x800, page);
    reader->read_physical((run.first_page + run.page_count - 1) * 0x1000, page);
  }
  uint8_t b[16];
  auto read = [&](uint64_t pa, std::span<uint8_t> out) { return reader->read_physical_exact(pa, out); };
  const uint64_t dtb = reader->header().directory_table_base;
  const uint64_t addresses[] = {0, 0xfffff80000000000, reader->header().context.rip, reader->header().ps_loaded_module_list};
  for (uint64_t va : addresses) {
    (void)toolhost::paging::read_virtual(dtb, va, b, read);
  }
  return 0;
}
