// Test helper: a minimal ELF64 x86-64 shared object made in memory around sections the caller
// supplies (what the DWARF fuzzers wrap their hostile bytes in, so that libelf accepts the file
// and libdw reaches the bytes). One PT_LOAD covers [0, load_size); sections keep the addresses
// given (0 for sections that are not loaded).
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace toolhost::testing {

struct elf_section {
  std::string name;
  std::string bytes;
  uint64_t address = 0;  // 0: not loaded (the .debug_* sections)
  uint32_t type = SHT_PROGBITS;
};

inline std::string make_elf_image(const std::vector<elf_section>& sections, uint64_t load_size) {
  std::string shstrtab(1, '\0');
  std::vector<uint32_t> names;
  for (const auto& s : sections) {
    names.push_back(static_cast<uint32_t>(shstrtab.size()));
    shstrtab += s.name + '\0';
  }
  const uint32_t shstrtab_name = static_cast<uint32_t>(shstrtab.size());
  shstrtab += std::string(".shstrtab") + '\0';

  std::string out(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), '\0');
  std::vector<Elf64_Shdr> headers(1);  // the null section
  auto place = [&](const std::string& bytes) {
    while (out.size() % 16 != 0) out += '\0';
    const uint64_t offset = out.size();
    out += bytes;
    return offset;
  };
  for (size_t i = 0; i < sections.size(); ++i) {
    const auto& s = sections[i];
    Elf64_Shdr h{};
    h.sh_name = names[i];
    h.sh_type = s.type;
    h.sh_flags = s.address != 0 ? SHF_ALLOC : 0;
    if (s.name == ".text") h.sh_flags |= SHF_EXECINSTR;
    h.sh_addr = s.address;
    h.sh_offset = s.type == SHT_NOBITS ? out.size() : place(s.bytes);
    h.sh_size = s.bytes.size();
    h.sh_addralign = 1;
    headers.push_back(h);
  }
  Elf64_Shdr strings{};
  strings.sh_name = shstrtab_name;
  strings.sh_type = SHT_STRTAB;
  strings.sh_offset = place(shstrtab);
  strings.sh_size = shstrtab.size();
  strings.sh_addralign = 1;
  headers.push_back(strings);
  const uint64_t shoff = place(std::string(headers.size() * sizeof(Elf64_Shdr), '\0'));
  std::memcpy(out.data() + shoff, headers.data(), headers.size() * sizeof(Elf64_Shdr));

  Elf64_Ehdr e{};
  std::memcpy(e.e_ident, ELFMAG, SELFMAG);
  e.e_ident[EI_CLASS] = ELFCLASS64;
  e.e_ident[EI_DATA] = ELFDATA2LSB;
  e.e_ident[EI_VERSION] = EV_CURRENT;
  e.e_type = ET_DYN;
  e.e_machine = EM_X86_64;
  e.e_version = EV_CURRENT;
  e.e_phoff = sizeof(Elf64_Ehdr);
  e.e_shoff = shoff;
  e.e_ehsize = sizeof(Elf64_Ehdr);
  e.e_phentsize = sizeof(Elf64_Phdr);
  e.e_phnum = 1;
  e.e_shentsize = sizeof(Elf64_Shdr);
  e.e_shnum = static_cast<uint16_t>(headers.size());
  e.e_shstrndx = static_cast<uint16_t>(headers.size() - 1);
  std::memcpy(out.data(), &e, sizeof e);
  Elf64_Phdr p{};
  p.p_type = PT_LOAD;
  p.p_flags = PF_R | PF_X;
  p.p_offset = 0;
  p.p_vaddr = 0;
  p.p_paddr = 0;
  p.p_filesz = out.size() < load_size ? out.size() : load_size;
  p.p_memsz = load_size;
  p.p_align = 0x1000;
  std::memcpy(out.data() + sizeof(Elf64_Ehdr), &p, sizeof p);
  return out;
}

}  // namespace toolhost::testing
