// toolhost::elf: one ELF file, read once into memory and described as plain values.
//
//   auto file = toolhost::elf::elf_file::open("/bin/true");
//   if (!file.ok()) return file.status();
//   for (const auto& f : file->functions()) ...;          // sorted by address
//   auto bytes = file->read(file->entry(), 16);            // by virtual address
//
// The whole file is parsed at open (libelf is not kept around), so an elf_file is a value:
// cheap to move, safe to share between threads for reading.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::elf {

enum class symbol_kind { function, object, other };

struct symbol {
  std::string name;
  uint64_t address = 0;
  uint64_t size = 0;  // 0 when the symbol table does not say
  symbol_kind kind = symbol_kind::other;
  bool global = false;       // STB_GLOBAL or STB_WEAK
  bool from_dynsym = false;  // found only in .dynsym
};

struct section {
  std::string name;
  uint32_t type = 0;     // SHT_*
  uint64_t flags = 0;    // SHF_*
  uint64_t address = 0;  // sh_addr; 0 for sections not loaded
  uint64_t offset = 0;   // sh_offset in the file
  uint64_t size = 0;
  bool allocated() const noexcept;       // SHF_ALLOC
  bool executable() const noexcept;      // SHF_EXECINSTR
  bool has_file_bytes() const noexcept;  // not SHT_NOBITS
  bool contains(uint64_t addr) const noexcept { return allocated() && addr >= address && addr - address < size; }
};

struct segment {
  uint32_t type = 0;   // PT_*
  uint32_t flags = 0;  // PF_R | PF_W | PF_X
  uint64_t offset = 0;
  uint64_t address = 0;  // p_vaddr
  uint64_t file_size = 0;
  uint64_t memory_size = 0;
};

// A symbol the file takes from a shared library: the dynamic loader writes its address into
// `slot` (a GOT entry) through a relocation.
struct import {
  std::string name;   // without the version ("puts", not "puts@GLIBC_2.2.5")
  uint64_t slot = 0;  // the relocation's target address
  uint32_t type = 0;  // R_*: JUMP_SLOT for PLT calls, GLOB_DAT for data and -fno-plt calls
};

class elf_file {
 public:
  // Reads and parses `path`. Errors name the file and the problem.
  static absl::StatusOr<elf_file> open(const std::filesystem::path& path);
  // Parses an image already in memory; `name` is used in error messages.
  static absl::StatusOr<elf_file> parse(std::string bytes, std::string name = "<memory>");

  const std::string& name() const noexcept { return name_; }
  std::string_view bytes() const noexcept { return bytes_; }

  bool is_64() const noexcept { return is_64_; }
  uint16_t machine() const noexcept { return machine_; }  // EM_*
  std::string machine_name() const;                       // "x86-64", "i386", "AArch64", ...
  uint16_t type() const noexcept { return type_; }        // ET_EXEC, ET_DYN, ...
  uint64_t entry() const noexcept { return entry_; }
  // True when the file has no .symtab (only .dynsym, if anything, names functions).
  bool stripped() const noexcept { return stripped_; }

  // Defined symbols with a name from .symtab and .dynsym, deduplicated by (name, address),
  // sorted by address then name.
  const std::vector<symbol>& symbols() const noexcept { return symbols_; }
  // The function symbols among them (STT_FUNC / STT_GNU_IFUNC), one per address (the .symtab
  // global name wins), sorted by address.
  const std::vector<symbol>& functions() const noexcept { return functions_; }
  const std::vector<section>& sections() const noexcept { return sections_; }
  const std::vector<segment>& segments() const noexcept { return segments_; }
  // Relocations (SHT_RELA and SHT_REL) that name an undefined symbol, or (x86) that bind a GOT
  // or PLT slot to a symbol a shared object defines and exports, in file order.
  const std::vector<import>& imports() const noexcept { return imports_; }
  const import* import_at_slot(uint64_t slot) const noexcept;

  // Function lookups. `function_at` returns the function whose [address, address+size)
  // holds `addr` (a function of size 0 holds only its first byte); `symbol_near` returns the
  // nearest symbol at or below `addr` (for "module!name+0x10" rendering), preferring functions.
  const symbol* find_function(std::string_view name) const noexcept;
  const symbol* find_symbol(std::string_view name) const noexcept;
  const symbol* function_at(uint64_t addr) const noexcept;
  const symbol* symbol_near(uint64_t addr) const noexcept;
  const section* find_section(std::string_view name) const noexcept;
  const section* section_at(uint64_t addr) const noexcept;

  // Where virtual address `addr` lies in the file, through the PT_LOAD segments (sections for
  // files without segments, e.g. relocatable objects); nullopt when no file byte backs it.
  std::optional<uint64_t> file_offset(uint64_t addr) const noexcept;
  // `size` bytes starting at virtual address `addr`. Bytes a segment maps beyond its file
  // size (.bss) read as zero. Fails when any byte is unmapped.
  absl::StatusOr<std::string> read(uint64_t addr, size_t size) const;

 private:
  elf_file() = default;
  absl::Status load();

  std::string name_;
  std::string bytes_;
  bool is_64_ = false;
  uint16_t machine_ = 0;
  uint16_t type_ = 0;
  uint64_t entry_ = 0;
  bool stripped_ = true;
  std::vector<symbol> symbols_;
  std::vector<symbol> functions_;
  std::vector<section> sections_;
  std::vector<segment> segments_;
  std::vector<import> imports_;
};

}  // namespace toolhost::elf
