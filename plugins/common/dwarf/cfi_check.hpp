// A bound libdw does not keep: executing CFI, libdw grows its register table to the highest
// register number an instruction names (up to INT32_MAX/8 entries of 8 bytes, 2 GB,
// zero-filled), so one hostile instruction in a target's .eh_frame costs the debugger that much
// memory (fuzz_dwarf_cfi: DW_CFA_GNU_negative_offset_extended naming register 242514544, 1.94 GB).
// cfi_registers_bounded reads every CIE and FDE of a section (without executing it) where libdw itself delimits them
// (dwarf_next_cfi: the entries, a CIE's augmentation and initial instructions; an FDE's header read as libdw's
// intern_fde reads it) and says whether each register they name is below kMaxCfiRegister. Whatever it cannot be sure to
// read as libdw does (a CIE version outside the specifications, an augmentation letter or opcode it does not know, a
// cut instruction) counts as out of bounds: the walker then unwinds that module by frame pointers.
#pragma once

#include <libelf.h>

#include <cstdint>

namespace toolhost::dwarf {

// x86-64 DWARF numbers stop at 130 (the vector and mask registers); 1024 leaves room for other
// targets' numbering.
inline constexpr unsigned kMaxCfiRegister = 1024;

// A CFI section as libdw's dwarf_getcfi_elf / dwarf_getcfi find it.
struct cfi_section {
  const unsigned char* e_ident = nullptr;  // the ELF file's identification bytes
  Elf_Data* data = nullptr;                // the whole .eh_frame, or .debug_frame
  bool eh_frame = true;
  uint64_t address = 0;               // .eh_frame's sh_addr
  Elf_Data* search_table = nullptr;   // .eh_frame_hdr, when there is one
  uint64_t search_table_address = 0;  // its sh_addr
};

// False when a register is out of bounds or the reading is not sure; entries libdw cannot read
// either are skipped as libdw skips them. With .eh_frame_hdr, libdw goes straight to the FDE
// offsets its table names, so each must be one of the entries read here.
bool cfi_registers_bounded(const cfi_section& section);

}  // namespace toolhost::dwarf
