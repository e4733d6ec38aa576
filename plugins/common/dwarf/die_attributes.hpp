// Reading one attribute of a DIE as a plain value (internal to toolhost::dwarf). The string and
// unsigned readers follow DW_AT_abstract_origin and DW_AT_specification (an inlined or
// out-of-line instance takes its name and type from its abstract DIE); the address and flag
// readers look at the DIE itself.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <optional>
#include <string>

namespace toolhost::dwarf {

inline std::string string_attr(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return "";
  const char* s = dwarf_formstring(&attr);
  return s != nullptr ? s : "";
}

inline std::optional<uint64_t> unsigned_attr(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  Dwarf_Word v = 0;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr || dwarf_formudata(&attr, &v) != 0) return std::nullopt;
  return v;
}

inline std::optional<uint64_t> address_attr(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  Dwarf_Addr v = 0;
  if (dwarf_attr(die, name, &attr) == nullptr || dwarf_formaddr(&attr, &v) != 0) return std::nullopt;
  return v;
}

inline bool flag_attr(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  bool v = false;
  return dwarf_attr(die, name, &attr) != nullptr && dwarf_formflag(&attr, &v) == 0 && v;
}

}  // namespace toolhost::dwarf
