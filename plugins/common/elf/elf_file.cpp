#include "toolhost/elf/elf_file.hpp"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <utility>

#include <absl/status/status.h>

namespace toolhost::elf {
namespace {

struct elf_closer {
  void operator()(Elf* e) const noexcept { elf_end(e); }
};
using elf_handle = std::unique_ptr<Elf, elf_closer>;

std::string libelf_error() {
  const char* text = elf_errmsg(-1);
  return text != nullptr ? text : "unknown libelf error";
}

bool is_function_type(unsigned char type) { return type == STT_FUNC || type == STT_GNU_IFUNC; }

symbol_kind kind_of(unsigned char type) {
  if (is_function_type(type)) return symbol_kind::function;
  if (type == STT_OBJECT || type == STT_TLS || type == STT_COMMON) return symbol_kind::object;
  return symbol_kind::other;
}

}  // namespace

bool section::allocated() const noexcept { return (flags & SHF_ALLOC) != 0; }
bool section::executable() const noexcept { return (flags & SHF_EXECINSTR) != 0; }
bool section::has_file_bytes() const noexcept { return type != SHT_NOBITS; }

absl::StatusOr<elf_file> elf_file::open(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path.string() + ": no such readable file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError("cannot read " + path.string());
  return parse(std::move(bytes), path.string());
}

absl::StatusOr<elf_file> elf_file::parse(std::string bytes, std::string name) {
  elf_file file;
  file.name_ = std::move(name);
  file.bytes_ = std::move(bytes);
  if (absl::Status s = file.load(); !s.ok()) return s;
  return file;
}

absl::Status elf_file::load() {
  if (elf_version(EV_CURRENT) == EV_NONE) return absl::InternalError("libelf is too old: " + libelf_error());
  if (bytes_.size() < EI_NIDENT || bytes_.compare(0, 4, ELFMAG, 4) != 0) {
    return absl::InvalidArgumentError(name_ + " is not an ELF file");
  }
  // libelf may convert byte order in place, so it gets its own copy of the image.
  std::string image = bytes_;
  elf_handle e(elf_memory(image.data(), image.size()));
  if (!e || elf_kind(e.get()) != ELF_K_ELF) {
    return absl::InvalidArgumentError(name_ + " is not a readable ELF file: " + libelf_error());
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(e.get(), &ehdr) == nullptr) {
    return absl::InvalidArgumentError(name_ + " has a broken ELF header: " + libelf_error());
  }
  is_64_ = gelf_getclass(e.get()) == ELFCLASS64;
  machine_ = ehdr.e_machine;
  type_ = ehdr.e_type;
  entry_ = ehdr.e_entry;

  size_t phnum = 0;
  if (elf_getphdrnum(e.get(), &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(e.get(), static_cast<int>(i), &ph) == nullptr) continue;
      segments_.push_back({ph.p_type, ph.p_flags, ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz});
    }
  }

  size_t shstrndx = 0;
  const bool have_names = elf_getshdrstrndx(e.get(), &shstrndx) == 0;
  // Symbols keyed by (address, name) so .symtab and .dynsym copies merge.
  std::map<std::pair<uint64_t, std::string>, symbol> merged;
  bool has_symtab = false;
  for (Elf_Scn* scn = elf_nextscn(e.get(), nullptr); scn != nullptr; scn = elf_nextscn(e.get(), scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    section s;
    if (have_names) {
      const char* n = elf_strptr(e.get(), shstrndx, sh.sh_name);
      s.name = n != nullptr ? n : "";
    }
    s.type = sh.sh_type;
    s.flags = sh.sh_flags;
    s.address = sh.sh_addr;
    s.offset = sh.sh_offset;
    s.size = sh.sh_size;
    sections_.push_back(s);

    if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
    const bool dynamic = sh.sh_type == SHT_DYNSYM;
    if (!dynamic) has_symtab = true;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || sh.sh_entsize == 0) continue;
    const size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t i = 1; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
      if (sym.st_shndx == SHN_UNDEF) continue;  // imports: no address in this file
      const unsigned char type = GELF_ST_TYPE(sym.st_info);
      if (type == STT_SECTION || type == STT_FILE) continue;
      const char* n = elf_strptr(e.get(), sh.sh_link, sym.st_name);
      if (n == nullptr || *n == '\0') continue;
      const unsigned char bind = GELF_ST_BIND(sym.st_info);
      auto [it, inserted] = merged.try_emplace({sym.st_value, n});
      symbol& out = it->second;
      if (inserted) {
        out.name = n;
        out.address = sym.st_value;
        out.size = sym.st_size;
        out.kind = kind_of(type);
        out.global = bind == STB_GLOBAL || bind == STB_WEAK;
        out.from_dynsym = dynamic;
      } else if (!dynamic) {
        out.from_dynsym = false;
      }
    }
  }
  stripped_ = !has_symtab;

  // Imports: relocations whose symbol is undefined here, named through their symbol table.
  for (Elf_Scn* scn = elf_nextscn(e.get(), nullptr); scn != nullptr; scn = elf_nextscn(e.get(), scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL)) continue;
    Elf_Scn* symscn = elf_getscn(e.get(), sh.sh_link);
    GElf_Shdr symsh;
    if (symscn == nullptr || gelf_getshdr(symscn, &symsh) == nullptr || symsh.sh_entsize == 0 ||
        (symsh.sh_type != SHT_DYNSYM && symsh.sh_type != SHT_SYMTAB)) {
      continue;
    }
    Elf_Data* rel = elf_getdata(scn, nullptr);
    Elf_Data* syms = elf_getdata(symscn, nullptr);
    if (rel == nullptr || syms == nullptr || sh.sh_entsize == 0) continue;
    const size_t count = sh.sh_size / sh.sh_entsize;
    const size_t nsyms = symsh.sh_size / symsh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      uint64_t offset = 0;
      uint64_t info = 0;
      if (sh.sh_type == SHT_RELA) {
        GElf_Rela r;
        if (gelf_getrela(rel, static_cast<int>(i), &r) == nullptr) continue;
        offset = r.r_offset;
        info = r.r_info;
      } else {
        GElf_Rel r;
        if (gelf_getrel(rel, static_cast<int>(i), &r) == nullptr) continue;
        offset = r.r_offset;
        info = r.r_info;
      }
      // gelf hands 32-bit r_info over in the 64-bit layout, so GELF_R_* fits both classes.
      const size_t index = GELF_R_SYM(info);
      const uint32_t type = static_cast<uint32_t>(GELF_R_TYPE(info));
      if (index == 0 || index >= nsyms) continue;
      GElf_Sym sym;
      if (gelf_getsym(syms, static_cast<int>(index), &sym) == nullptr) continue;
      // A defined symbol still goes through its slot when a shared object exports it (the
      // loader may bind it elsewhere): R_*_GLOB_DAT and R_*_JUMP_SLOT are 6 and 7 on both x86s.
      const bool binds_slot = (machine_ == EM_X86_64 || machine_ == EM_386) && (type == 6 || type == 7);
      if (sym.st_shndx != SHN_UNDEF && !binds_slot) continue;
      const char* n = elf_strptr(e.get(), symsh.sh_link, sym.st_name);
      if (n == nullptr || *n == '\0') continue;
      imports_.push_back({n, offset, type});
    }
  }

  symbols_.reserve(merged.size());
  for (auto& [key, sym] : merged) symbols_.push_back(std::move(sym));
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const symbol& a, const symbol& b) { return a.address < b.address; });

  // One function per address: prefer a global name, then a sized one (aliases such as
  // __libc_start_main@@ and local copies point at the same code).
  for (const symbol& s : symbols_) {
    if (s.kind != symbol_kind::function) continue;
    if (!functions_.empty() && functions_.back().address == s.address) {
      symbol& kept = functions_.back();
      const bool better = (s.global && !kept.global) || (s.global == kept.global && kept.size == 0 && s.size != 0);
      if (better) kept = s;
      continue;
    }
    functions_.push_back(s);
  }
  return absl::OkStatus();
}

std::string elf_file::machine_name() const {
  switch (machine_) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "i386";
    case EM_AARCH64: return "AArch64";
    case EM_ARM: return "ARM";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "PowerPC64";
    default: return "machine " + std::to_string(machine_);
  }
}

const import* elf_file::import_at_slot(uint64_t slot) const noexcept {
  for (const import& i : imports_) {
    if (i.slot == slot) return &i;
  }
  return nullptr;
}

const symbol* elf_file::find_function(std::string_view name) const noexcept {
  for (const symbol& s : functions_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const symbol* elf_file::find_symbol(std::string_view name) const noexcept {
  for (const symbol& s : symbols_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const symbol* elf_file::function_at(uint64_t addr) const noexcept {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), addr,
                             [](uint64_t a, const symbol& s) { return a < s.address; });
  if (it == functions_.begin()) return nullptr;
  const symbol& f = *std::prev(it);
  const uint64_t extent = f.size == 0 ? 1 : f.size;
  return addr - f.address < extent ? &f : nullptr;
}

const symbol* elf_file::symbol_near(uint64_t addr) const noexcept {
  auto pick = [addr](const std::vector<symbol>& list) -> const symbol* {
    auto it =
        std::upper_bound(list.begin(), list.end(), addr, [](uint64_t a, const symbol& s) { return a < s.address; });
    return it == list.begin() ? nullptr : &*std::prev(it);
  };
  if (const symbol* f = pick(functions_)) return f;
  return pick(symbols_);
}

const section* elf_file::find_section(std::string_view name) const noexcept {
  for (const section& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const section* elf_file::section_at(uint64_t addr) const noexcept {
  for (const section& s : sections_) {
    if (s.contains(addr)) return &s;
  }
  return nullptr;
}

std::optional<uint64_t> elf_file::file_offset(uint64_t addr) const noexcept {
  for (const segment& seg : segments_) {
    if (seg.type != PT_LOAD) continue;
    if (addr >= seg.address && addr - seg.address < seg.file_size) return seg.offset + (addr - seg.address);
  }
  if (segments_.empty()) {
    for (const section& s : sections_) {
      if (s.contains(addr) && s.has_file_bytes()) return s.offset + (addr - s.address);
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::string> elf_file::read(uint64_t addr, size_t size) const {
  std::string out;
  out.reserve(size);
  while (out.size() < size) {
    const uint64_t at = addr + out.size();
    bool mapped = false;
    for (const segment& seg : segments_) {
      if (seg.type != PT_LOAD || at < seg.address || at - seg.address >= seg.memory_size) continue;
      const uint64_t into = at - seg.address;
      const uint64_t want = std::min<uint64_t>(size - out.size(), seg.memory_size - into);
      if (into < seg.file_size) {
        const uint64_t from_file = std::min<uint64_t>(want, seg.file_size - into);
        const uint64_t offset = seg.offset + into;
        if (offset > bytes_.size() || bytes_.size() - offset < from_file) {
          return absl::DataLossError(name_ + " is truncated: a segment reaches past the end of the file");
        }
        out.append(bytes_, offset, from_file);
      } else {
        out.append(want, '\0');  // .bss and the like
      }
      mapped = true;
      break;
    }
    if (!mapped && segments_.empty()) {
      if (auto off = file_offset(at); off && *off < bytes_.size()) {
        out.push_back(bytes_[*off]);
        mapped = true;
      }
    }
    if (!mapped) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(at));
      return absl::OutOfRangeError(std::string("address ") + hex + " is not mapped by " + name_);
    }
  }
  return out;
}

}  // namespace toolhost::elf
