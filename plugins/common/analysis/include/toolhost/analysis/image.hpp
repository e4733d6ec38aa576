// toolhost::analysis: one executable file as the analysis sees it, whatever its format: where
// its sections and segments lie in memory and in the file, its symbols, the import slots the
// loader fills, and the function extents its exception tables describe.
//
//   auto elf = toolhost::elf::elf_file::open(path);
//   auto img = toolhost::analysis::image_from_elf(std::make_shared<const elf::elf_file>(std::move(*elf)));
//   auto bytes = img.read(img.entry(), 16);
//
// An image views the file's bytes where the format's reader keeps them (and keeps that reader
// alive), so building one copies nothing large. It is immutable and may be read from several
// threads; copies share the bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::elf {
class elf_file;
}
namespace toolhost::pe {
class image;
}

namespace toolhost::analysis {

enum class file_format { elf, pe };
// The instruction sets the analysis decodes; `other` images are read but not disassembled.
enum class architecture { x86, x86_64, other };

std::string_view to_string(file_format f);   // "elf", "pe" (REA's format names)
std::string_view to_string(architecture a);  // "x86", "x86_64", "other"

// A section: a named, contiguous piece of the address space.
struct section {
  std::string name;
  uint64_t address = 0;
  uint64_t size = 0;         // in memory
  uint64_t file_offset = 0;  // where its bytes start in the file
  uint64_t file_size = 0;    // how many of them the file holds (0 for .bss)
  bool readable = true;
  bool writable = false;
  bool executable = false;
  // PLT-like: small stubs that jump through import slots (.plt, .plt.sec, .plt.got on ELF).
  bool import_stubs = false;
  uint64_t end() const noexcept { return address + size; }
  bool contains(uint64_t a) const noexcept { return a >= address && a - address < size; }
};

// A segment: what the loader maps (ELF PT_LOAD; a PE section maps itself).
struct segment {
  std::string name;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;
  uint64_t file_size = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  uint64_t end() const noexcept { return address + size; }
};

enum class symbol_kind { function, object, other };

struct symbol {
  std::string name;
  uint64_t address = 0;
  uint64_t size = 0;  // 0 when the file does not say
  symbol_kind kind = symbol_kind::other;
  bool global = false;
};

// An address the loader fills with an imported symbol's address (a GOT or IAT entry).
struct import_slot {
  uint64_t slot = 0;
  std::string name;     // "puts"
  std::string library;  // "KERNEL32.dll" on PE; empty on ELF, where the loader searches
};

// A function extent from the exception tables (.eh_frame FDEs, .pdata).
struct code_extent {
  uint64_t start = 0;
  uint64_t end = 0;
};

// Code the loader calls by itself: ELF's DT_INIT and DT_FINI and the entries of its init,
// fini and preinit arrays; PE's TLS callbacks. Named the way Ghidra labels them (_DT_INIT,
// _INIT_0, ...), which a symbol's name replaces.
struct loader_call {
  uint64_t address = 0;
  std::string name;
};

class image {
 public:
  struct parts {
    file_format format = file_format::elf;
    architecture arch = architecture::other;
    std::string machine;  // what the header says, for people: "x86-64", "i386", "AArch64"
    std::string kind;     // "executable", "shared-library", "relocatable", "core"
    uint64_t entry = 0;
    uint64_t image_base = 0;
    std::vector<section> sections;
    std::vector<segment> segments;
    std::vector<symbol> symbols;
    std::vector<import_slot> imports;
    std::vector<code_extent> unwind_extents;
    std::vector<loader_call> loader_calls;
    // i386 PIC PLT stubs address their slots relative to ebx, which holds this address.
    std::optional<uint64_t> got_base;
  };

  image() = default;  // empty: no sections, no bytes
  // `bytes` is the whole file, kept valid by `owner`; `name` is used in messages.
  image(std::string name, std::shared_ptr<const void> owner, std::string_view bytes, parts p);

  const std::string& name() const noexcept { return name_; }
  std::string_view bytes() const noexcept { return bytes_; }
  file_format format() const noexcept { return parts_.format; }
  architecture arch() const noexcept { return parts_.arch; }
  const std::string& machine() const noexcept { return parts_.machine; }
  const std::string& kind() const noexcept { return parts_.kind; }
  uint64_t entry() const noexcept { return parts_.entry; }
  uint64_t image_base() const noexcept { return parts_.image_base; }
  std::optional<uint64_t> got_base() const noexcept { return parts_.got_base; }

  // Sorted by address.
  const std::vector<section>& sections() const noexcept { return parts_.sections; }
  const std::vector<segment>& segments() const noexcept { return parts_.segments; }
  // Defined symbols, sorted by address then name.
  const std::vector<symbol>& symbols() const noexcept { return parts_.symbols; }
  // Sorted by slot address.
  const std::vector<import_slot>& imports() const noexcept { return parts_.imports; }
  // Sorted by start.
  const std::vector<code_extent>& unwind_extents() const noexcept { return parts_.unwind_extents; }
  const std::vector<loader_call>& loader_calls() const noexcept { return parts_.loader_calls; }

  const section* section_at(uint64_t address) const noexcept;
  const import_slot* import_at(uint64_t slot) const noexcept;
  bool is_code(uint64_t address) const noexcept;  // inside an executable section

  // Where `address` lies in the file; nullopt when no file byte backs it.
  std::optional<uint64_t> file_offset(uint64_t address) const noexcept;
  // The file's bytes for [address, address + size) when every one of them is in the file and
  // they are contiguous there (they always are within one section); empty otherwise.
  std::span<const uint8_t> file_bytes(uint64_t address, uint64_t size) const noexcept;
  // A section's bytes that the file holds.
  std::span<const uint8_t> section_bytes(const section& s) const noexcept;
  // Up to `size` bytes from `address` on, stopping at the first byte no section maps; bytes a
  // section maps beyond the file (.bss) read as zero. Fails when `address` itself is unmapped.
  absl::StatusOr<std::string> read(uint64_t address, size_t size) const;

 private:
  std::string name_;
  std::shared_ptr<const void> owner_;
  std::string_view bytes_;
  parts parts_;
};

// The analysis's view of a parsed ELF file (its .eh_frame FDEs included).
image image_from_elf(std::shared_ptr<const elf::elf_file> file);
// What a cut-short ELF file is missing ("its section headers end at byte N, past the end of the
// file (M bytes)"), or nullopt when everything its headers point at is in the file.
std::optional<std::string> elf_truncation(const elf::elf_file& file);

// The analysis's view of a PE file (its exports, imports, .pdata and TLS callbacks included), at
// the image's preferred base.
image image_from_pe(std::shared_ptr<const pe::image> file);
// What a cut-short PE file is missing, like elf_truncation.
std::optional<std::string> pe_truncation(const pe::image& file);

}  // namespace toolhost::analysis
