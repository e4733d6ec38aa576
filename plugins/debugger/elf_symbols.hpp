// Symbols of an ELF module from its file's .symtab and .dynsym (libelf, toolhost::elf).
#pragma once

#include <memory>

#include <toolhost/elf/elf_file.hpp>

#include "symbol_source.hpp"
#include "symbols.hpp"

namespace toolhost::debugger {

// The module's ELF file as its source; `low` is the file address the module's base stands for
// (its lowest loadable page).
std::shared_ptr<const symbol_source> make_elf_source(std::shared_ptr<const elf::elf_file> file, uint64_t low);

// Opens the module's file by its path. nullopt when the path is not an ELF file (another
// provider may know the module); a module_symbols with a problem when it is one but unreadable.
std::optional<module_symbols> elf_module_symbols(const module& m);

}  // namespace toolhost::debugger
