// libFuzzer: any bytes as an ELF core (through libelf and the note parsers); whatever opens must
// answer describe, registers and reads in bounds. (NT_FILE notes in the input may name files;
// reads of them are read-only and fail for paths that do not exist.)
#include <cstddef>
#include <cstdint>
#include <vector>

#include <toolhost/snapshot/session.hpp>
#include "elf_core.hpp"
#include "mapped_file.hpp"

namespace db = toolhost::dump_backend;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = db::mapped_file::copy_of({data, size}, "fuzz input");
  if (!file.ok()) return 0;
  auto snap = db::open_elf_core(std::move(*file));
  if (!snap.ok()) return 0;
  toolhost_debug_target_t* t = toolhost::snapshots::make_target(std::move(*snap));
  std::string sink;
  toolhost_writer_t w{&sink, [](void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }};
  t->describe(t, &w);
  t->list_threads(t, &w);
  t->list_modules(t, &w);
  uint64_t regs[64];
  size_t done = 0;
  t->read_registers(t, -1, regs, sizeof regs, &done, nullptr);
  std::vector<uint8_t> buffer(0x2000);
  const uint64_t addresses[] = {0, 0x1000, 0x400000, 0x7ffff7dd1000, regs[0], regs[16]};
  for (uint64_t a : addresses) {
    t->read_memory(t, TOOLHOST_DT_VIRTUAL, a, buffer.data(), buffer.size(), &done, nullptr);
    t->read_memory(t, TOOLHOST_DT_PHYSICAL, a, buffer.data(), buffer.size(), &done, nullptr);
  }
  t->close(t);
  return 0;
}
