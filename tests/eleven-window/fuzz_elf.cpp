// libFuzzer: arbitrary bytes as an ELF file, through toolhost::elf and the window's function
// discovery (which disassembles every executable section with toolhost::disasm).
#include <cstddef>
#include <cstdint>
#include <string>

#include <toolhost/elf/elf_file.hpp>

#include "program.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = toolhost::elf::elf_file::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!file.ok()) return 0;
  for (const auto& s : file->sections()) {
    (void)file->read(s.address, s.size > 64 ? 64 : s.size);
  }
  (void)file->read(file->entry(), 32);
  (void)file->symbol_near(file->entry());
  if (file->sections().size() > 256) return 0;  // keep one input's sweep short
  auto program = toolhost::eleven::program::from_elf(std::move(*file), "/fuzz");
  for (const auto& [address, f] : program.functions()) {
    (void)program.function_containing(address);
    (void)program.has_file_bytes(address, 4);
  }
  return 0;
}
