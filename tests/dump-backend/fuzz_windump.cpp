// libFuzzer: any bytes as a Windows crash dump: the header and page-layout parser, then what
// the dump backend does with an accepted dump (module list walk, describe, registers, physical
// and virtual reads) must stay in bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <toolhost/windump/dump_reader.hpp>

#include <toolhost/snapshot/session.hpp>
#include "mapped_file.hpp"
#include "windows_dump.hpp"

namespace db = toolhost::dump_backend;

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

  auto file = db::mapped_file::copy_of({data, size}, "fuzz input");
  if (!file.ok()) return 0;
  auto snap = db::open_windows_dump(std::move(*file));
  if (!snap.ok()) __builtin_trap();  // the reader accepted it, so the backend must too
  toolhost_debug_target_t* t = toolhost::snapshots::make_target(std::move(*snap));
  std::string sink;
  toolhost_writer_t w{&sink, [](void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }};
  t->describe(t, &w);
  t->list_modules(t, &w);
  uint64_t regs[64];
  size_t done = 0;
  t->read_registers(t, -1, regs, sizeof regs, &done, nullptr);
  const uint64_t addresses[] = {0, 0xfffff80000000000, reader->header().context.rip,
                                reader->header().ps_loaded_module_list};
  for (uint64_t va : addresses) t->read_memory(t, TOOLHOST_DT_VIRTUAL, va, page.data(), page.size(), &done, nullptr);
  t->close(t);
  return 0;
}
