#include "cfi_check.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace toolhost::dwarf {
namespace {

// A reader over [p, end) that fails (nullopt) instead of reading past the end.
struct bytes {
  const uint8_t* p;
  const uint8_t* end;
  size_t address_size = 8;

  bool skip(size_t n) {
    if (static_cast<size_t>(end - p) < n) return false;
    p += n;
    return true;
  }
  std::optional<uint8_t> u8() {
    if (p >= end) return std::nullopt;
    return *p++;
  }
  // At most ten bytes: libdw stops reading a longer one there (as UINT64_MAX), so where the
  // next operand starts would no longer agree.
  std::optional<uint64_t> uleb() {
    uint64_t v = 0;
    for (int shift = 0; p < end && shift < 70; shift += 7) {
      const uint8_t b = *p++;
      if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return std::nullopt;
  }
  bool skip_leb() { return uleb().has_value(); }
  // A pointer in DW_EH_PE encoding `enc`: its low bits give the size as libdw reads it
  // (encoded_value_size); an encoding libdw would not read is a failure.
  bool skip_encoded(uint8_t enc) {
    if ((enc & 0x70) == DW_EH_PE_aligned) return false;  // libdw aligns first: a position of its own
    switch (enc & 0x07) {
      case DW_EH_PE_absptr: return skip(address_size);
      case DW_EH_PE_uleb128: return skip_leb();  // and sleb128 (0x09)
      case DW_EH_PE_udata2: return skip(2);
      case DW_EH_PE_udata4: return skip(4);
      case DW_EH_PE_udata8: return skip(8);
      default: return false;
    }
  }
};

// False when an instruction names a register at or above the bound, when the stream is cut
// inside an instruction (libdw reads a cut operand as far as it goes), or at an opcode not
// listed here (whether libdw knows it, and how long its operands are, is not guessed).
bool instructions_bounded(bytes in, uint8_t pointer_encoding) {
  auto reg_ok = [&]() -> bool {
    auto r = in.uleb();
    return r && *r < kMaxCfiRegister;
  };
  while (in.p < in.end) {
    const uint8_t op = *in.p++;
    bool ok = true;
    switch (op & 0xc0) {
      case DW_CFA_advance_loc: continue;
      case DW_CFA_offset:
        if (!in.skip_leb()) return false;
        continue;
      case DW_CFA_restore: continue;
      default: break;
    }
    switch (op) {
      case DW_CFA_nop:
      case DW_CFA_remember_state:
      case DW_CFA_restore_state:
      case DW_CFA_GNU_window_save: break;
      case DW_CFA_set_loc: ok = in.skip_encoded(pointer_encoding); break;
      case DW_CFA_advance_loc1: ok = in.skip(1); break;
      case DW_CFA_advance_loc2: ok = in.skip(2); break;
      case DW_CFA_advance_loc4: ok = in.skip(4); break;
      case DW_CFA_def_cfa_offset:
      case DW_CFA_def_cfa_offset_sf:
      case DW_CFA_GNU_args_size: ok = in.skip_leb(); break;
      case DW_CFA_def_cfa_expression: {
        auto n = in.uleb();
        ok = n && in.skip(*n);
        break;
      }
      case DW_CFA_restore_extended:
      case DW_CFA_undefined:
      case DW_CFA_same_value:
      case DW_CFA_def_cfa_register: ok = reg_ok(); break;
      case DW_CFA_offset_extended:
      case DW_CFA_offset_extended_sf:
      case DW_CFA_def_cfa:
      case DW_CFA_def_cfa_sf:
      case DW_CFA_val_offset:
      case DW_CFA_val_offset_sf:
      case DW_CFA_GNU_negative_offset_extended: ok = reg_ok() && in.skip_leb(); break;
      case DW_CFA_register: ok = reg_ok() && reg_ok(); break;
      case DW_CFA_expression:
      case DW_CFA_val_expression: {
        ok = reg_ok();
        if (!ok) break;
        auto n = in.uleb();
        ok = n && in.skip(*n);
        break;
      }
      default: return false;
    }
    if (!ok) return false;
  }
  return true;
}

// What an FDE needs from its CIE, as libdw's intern_new_cie reads the augmentation: the
// encoding of its addresses and whether augmentation data ('z') precedes its instructions.
struct cie_facts {
  bool bounded = true;
  uint8_t fde_encoding = DW_EH_PE_absptr;
  bool has_z = false;
};

// The CIE's version byte, which Dwarf_CIE does not carry: it is the byte just before the
// augmentation string dwarf_next_cfi points at.
uint8_t cie_version(const Dwarf_CIE& cie) { return static_cast<uint8_t>(cie.augmentation[-1]); }

// Anything here that this reading is not sure to agree with libdw on refuses the section
// (bounded = false): a refusal costs a frame-pointer walk, a wrong acceptance 2 GB.
cie_facts read_cie(const Dwarf_CIE& cie, bool eh_frame, size_t address_size) {
  cie_facts f;
  f.bounded = false;
  // The versions the specifications define (.eh_frame: 1 and 3 in the LSB; .debug_frame: 1, 3,
  // 4); older libdw also reads others, with a layout of its own choosing.
  const uint8_t version = cie_version(cie);
  if (version != 1 && version != 3 && !(version == 4 && !eh_frame)) return f;
  if (cie.return_address_register >= kMaxCfiRegister) return f;
  const std::string_view aug = cie.augmentation;
  if (!aug.empty()) {
    // Without 'z' the augmentation's length is not known, and libdw stops reading it there.
    if (aug[0] != 'z' || cie.augmentation_data == nullptr) return f;
    f.has_z = true;
    bytes a{cie.augmentation_data, cie.augmentation_data + cie.augmentation_data_size, address_size};
    for (char c : aug.substr(1)) {
      if (c == 'R') {
        auto e = a.u8();
        if (!e) return f;
        f.fde_encoding = *e;
      } else if (c == 'P') {
        auto e = a.u8();
        if (!e || !a.skip_encoded(*e)) return f;
      } else if (c == 'L') {
        if (!a.skip(1)) return f;
      } else if (c != 'S') {
        return f;  // libdw skips an unknown letter after 'z'; its data could be anything
      }
    }
  }
  if (f.fde_encoding == DW_EH_PE_omit) return f;
  f.bounded =
      instructions_bounded({cie.initial_instructions, cie.initial_instructions_end, address_size}, f.fde_encoding);
  return f;
}

// Whether every FDE offset the .eh_frame_hdr table names is in `read`. The table is read as
// libdw's parse_eh_frame_hdr reads it, for the encodings every linker writes (eh_frame_ptr
// pc-relative, count udata4, the table's pairs data-relative sdata4); a header libdw would use
// in another encoding counts as not sure.
bool search_table_known(const cfi_section& s, const std::unordered_set<Dwarf_Off>& read) {
  if (s.search_table == nullptr) return true;
  const auto* h = static_cast<const uint8_t*>(s.search_table->d_buf);
  const size_t size = h != nullptr ? s.search_table->d_size : 0;
  if (size < 4 || h[0] != 1) return true;  // libdw refuses the whole CFI then
  if (h[1] == DW_EH_PE_omit) return true;
  if (h[1] != (DW_EH_PE_pcrel | DW_EH_PE_sdata4) || size < 12) return false;
  if (h[2] == DW_EH_PE_omit || h[3] == DW_EH_PE_omit) return true;  // no table: a linear search
  if (h[2] != DW_EH_PE_udata4 || h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4)) return false;
  auto word = [&](size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, h + at, 4);
    return static_cast<int64_t>(static_cast<int32_t>(v));
  };
  // libdw drops the table when its eh_frame_ptr does not point at this .eh_frame.
  if (s.search_table_address + 4 + word(4) != s.address) return true;
  const uint64_t count = static_cast<uint32_t>(word(8));
  if (count == 0) return true;
  if (count > (size - 12) / 8) return true;  // libdw refuses the whole CFI then
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t fde = s.search_table_address + word(12 + 8 * i + 4);
    if (!read.contains(fde - s.address)) return false;
  }
  return true;
}

}  // namespace

bool cfi_registers_bounded(const cfi_section& s) {
  const unsigned char* e_ident = s.e_ident;
  Elf_Data* data = s.data;
  const bool eh_frame = s.eh_frame;
  if (data == nullptr || data->d_buf == nullptr) return false;
  const size_t address_size = e_ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
  std::unordered_map<Dwarf_Off, cie_facts> cies;
  std::unordered_set<Dwarf_Off> read;  // the entries read, by offset
  // The CIE an FDE names, read at that offset as libdw's __libdw_find_cie reads it; null when
  // libdw could not read it either (the FDE is then never executed).
  auto cie_at = [&](Dwarf_Off offset) -> const cie_facts* {
    if (auto it = cies.find(offset); it != cies.end()) return &it->second;
    Dwarf_Off next = 0;
    Dwarf_CFI_Entry entry;
    if (dwarf_next_cfi(e_ident, data, eh_frame, offset, &next, &entry) != 0 || entry.CIE_id != DW_CIE_ID_64) {
      return nullptr;
    }
    return &cies.emplace(offset, read_cie(entry.cie, eh_frame, address_size)).first->second;
  };
  // Every entry in the order libdw's __libdw_find_fde reads them: an entry it cannot read is
  // skipped when its length is known, and the walk ends where it is not.
  Dwarf_Off offset = 0;
  for (size_t entries = 0; entries < (size_t{1} << 24); ++entries) {
    Dwarf_Off next = offset;
    Dwarf_CFI_Entry entry;
    const int result = dwarf_next_cfi(e_ident, data, eh_frame, offset, &next, &entry);
    if (result > 0 || next <= offset || next == static_cast<Dwarf_Off>(-1)) break;
    if (result < 0) {
      offset = next;
      continue;
    }
    const cie_facts* c = cie_at(entry.CIE_id == DW_CIE_ID_64 ? offset : entry.fde.CIE_pointer);
    if (c != nullptr && !c->bounded) return false;
    if (c != nullptr && entry.CIE_id != DW_CIE_ID_64) {
      // libdw's intern_fde: initial_location and address_range in the CIE's encoding (an
      // absolute pointer is the ELF class's size), then the 'z' data, then the instructions.
      bytes in{entry.fde.start, entry.fde.end, address_size};
      bool ok = in.skip_encoded(c->fde_encoding) && in.skip_encoded(c->fde_encoding & 0x0f);
      if (ok && c->has_z) {
        auto n = in.uleb();
        ok = n && in.skip(*n);
      }
      if (!ok || !instructions_bounded(in, c->fde_encoding)) return false;
    }
    read.insert(offset);
    offset = next;
  }
  return search_table_known(s, read);
}

}  // namespace toolhost::dwarf
