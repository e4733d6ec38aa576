// image_from_elf: the ELF reader's sections, PT_LOAD segments, symbols and relocations, plus
// the FDEs of .eh_frame, as an analysis image.
#include <elf.h>

#include <toolhost/elf/elf_file.hpp>

#include "toolhost/analysis/eh_frame.hpp"
#include "toolhost/analysis/image.hpp"

namespace toolhost::analysis {
namespace {

std::string kind_of(const elf::elf_file& f) {
  switch (f.type()) {
    case ET_EXEC: return "executable";
    case ET_REL: return "relocatable";
    case ET_CORE: return "core";
    case ET_DYN:
      // A PIE is ET_DYN too; the interpreter request is what makes it a program.
      for (const elf::segment& s : f.segments()) {
        if (s.type == PT_INTERP) return "executable";
      }
      return "shared-library";
    default: return "unknown";
  }
}

bool is_stub_section(std::string_view name) { return name == ".plt" || name == ".plt.sec" || name == ".plt.got"; }

uint64_t little_endian(const uint8_t* p, unsigned size) {
  uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// DT_INIT, DT_FINI and the pointers in the init, fini and preinit arrays (x86 is
// little-endian, and only x86 code is analysed, so other byte orders are not read).
std::vector<loader_call> loader_calls_of(const elf::elf_file& f) {
  std::vector<loader_call> out;
  const unsigned word = f.is_64() ? 8 : 4;
  const auto contents = [&f](const elf::section& s) -> std::pair<const uint8_t*, uint64_t> {
    if (!s.has_file_bytes() || s.offset > f.bytes().size() || f.bytes().size() - s.offset < s.size) return {nullptr, 0};
    return {reinterpret_cast<const uint8_t*>(f.bytes().data()) + s.offset, s.size};
  };
  for (const elf::section& s : f.sections()) {
    auto [data, size] = contents(s);
    if (data == nullptr) continue;
    if (s.type == SHT_DYNAMIC) {
      for (uint64_t at = 0; at + 2 * word <= size; at += 2 * word) {
        const uint64_t tag = little_endian(data + at, word);
        const uint64_t value = little_endian(data + at + word, word);
        if (tag == DT_NULL) break;
        if (tag == DT_INIT) out.push_back({value, "_DT_INIT"});
        if (tag == DT_FINI) out.push_back({value, "_DT_FINI"});
      }
    }
    const char* prefix = s.type == SHT_INIT_ARRAY      ? "_INIT_"
                         : s.type == SHT_FINI_ARRAY    ? "_FINI_"
                         : s.type == SHT_PREINIT_ARRAY ? "_PREINIT_"
                                                       : nullptr;
    if (prefix == nullptr) continue;
    size_t index = 0;
    for (uint64_t at = 0; at + word <= size; at += word) {
      const uint64_t value = little_endian(data + at, word);
      // 0 and -1 mark the ends of the arrays in some toolchains' output.
      if (value != 0 && value != (word == 8 ? ~0ULL : 0xffffffffULL))
        out.push_back({value, prefix + std::to_string(index++)});
    }
  }
  return out;
}

}  // namespace

image image_from_elf(std::shared_ptr<const elf::elf_file> file) {
  const elf::elf_file& f = *file;
  image::parts p;
  p.format = file_format::elf;
  p.arch = f.machine() == EM_X86_64 ? architecture::x86_64
           : f.machine() == EM_386  ? architecture::x86
                                    : architecture::other;
  p.machine = f.machine_name();
  p.kind = kind_of(f);
  p.entry = f.entry();

  bool have_base = false;
  size_t load_index = 0;
  for (const elf::segment& s : f.segments()) {
    if (s.type != PT_LOAD || s.memory_size == 0) continue;
    segment out;
    out.name = "LOAD_" + std::to_string(load_index++);
    out.address = s.address;
    out.size = s.memory_size;
    out.file_offset = s.offset;
    out.file_size = std::min(s.file_size, s.memory_size);
    out.readable = (s.flags & PF_R) != 0;
    out.writable = (s.flags & PF_W) != 0;
    out.executable = (s.flags & PF_X) != 0;
    if (!have_base || s.address < p.image_base) p.image_base = s.address;
    have_base = true;
    p.segments.push_back(std::move(out));
  }

  for (const elf::section& s : f.sections()) {
    if (!s.allocated() || s.size == 0) continue;
    // .tbss lies over the sections after it: thread-local storage has no address of its own.
    if ((s.flags & SHF_TLS) != 0 && !s.has_file_bytes()) continue;
    section out;
    out.name = s.name;
    out.address = s.address;
    out.size = s.size;
    out.file_offset = s.offset;
    out.file_size = s.has_file_bytes() ? s.size : 0;
    out.writable = (s.flags & SHF_WRITE) != 0;
    out.executable = s.executable();
    out.import_stubs = out.executable && is_stub_section(s.name);
    p.sections.push_back(std::move(out));
    if (s.name == ".eh_frame" && s.has_file_bytes() && s.offset <= f.bytes().size() &&
        f.bytes().size() - s.offset >= s.size) {
      const auto* data = reinterpret_cast<const uint8_t*>(f.bytes().data()) + s.offset;
      p.unwind_extents = parse_eh_frame({data, static_cast<size_t>(s.size)}, s.address, f.is_64() ? 8 : 4);
    }
  }
  if (const elf::section* got = f.find_section(".got.plt"))
    p.got_base = got->address;
  else if (const elf::section* got2 = f.find_section(".got"))
    p.got_base = got2->address;

  for (const elf::symbol& s : f.symbols()) {
    symbol out;
    out.name = s.name;
    out.address = s.address;
    out.size = s.size;
    out.kind = s.kind == elf::symbol_kind::function ? symbol_kind::function
               : s.kind == elf::symbol_kind::object ? symbol_kind::object
                                                    : symbol_kind::other;
    out.global = s.global;
    p.symbols.push_back(std::move(out));
  }
  for (const elf::import& i : f.imports()) p.imports.push_back({i.slot, i.name, {}});
  if (p.arch != architecture::other) p.loader_calls = loader_calls_of(f);

  std::string name = f.name();
  const std::string_view bytes = f.bytes();
  return image(std::move(name), std::move(file), bytes, std::move(p));
}

std::optional<std::string> elf_truncation(const elf::elf_file& f) {
  const std::string_view b = f.bytes();
  const uint64_t size = b.size();
  const auto past_end = [size](uint64_t offset, uint64_t length) { return offset > size || size - offset < length; };
  for (const elf::segment& s : f.segments()) {
    if (s.type == PT_LOAD && past_end(s.offset, s.file_size)) {
      return "a loaded segment ends at byte " + std::to_string(s.offset + s.file_size) +
             ", past the end of the file (" + std::to_string(size) + " bytes)";
    }
  }
  // The section header table, from the ELF header (libelf drops sections it cannot read).
  const bool is64 = f.is_64();
  const size_t need = is64 ? 0x40 : 0x34;
  if (size < need || b[EI_DATA] != ELFDATA2LSB) return std::nullopt;
  const auto* p = reinterpret_cast<const uint8_t*>(b.data());
  const uint64_t shoff = is64 ? little_endian(p + 0x28, 8) : little_endian(p + 0x20, 4);
  const uint64_t shentsize = little_endian(p + (is64 ? 0x3a : 0x2e), 2);
  const uint64_t shnum = little_endian(p + (is64 ? 0x3c : 0x30), 2);
  if (shoff != 0 && shnum != 0 && past_end(shoff, shentsize * shnum)) {
    return "its section headers end at byte " + std::to_string(shoff + shentsize * shnum) +
           ", past the end of the file (" + std::to_string(size) + " bytes)";
  }
  for (const elf::section& s : f.sections()) {
    if (s.has_file_bytes() && s.size != 0 && past_end(s.offset, s.size)) {
      return "section " + s.name + " ends at byte " + std::to_string(s.offset + s.size) +
             ", past the end of the file (" + std::to_string(size) + " bytes)";
    }
  }
  return std::nullopt;
}

}  // namespace toolhost::analysis
