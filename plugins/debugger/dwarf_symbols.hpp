// DWARF and the full symbol tables of an ELF module (its own or its separate debug file's) as a
// symbol source, and its CFI as the module's unwinder, through toolhost::dwarf (libdw).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <absl/status/statusor.h>

#include <toolhost/dwarf/module_debug.hpp>

#include "symbol_source.hpp"
#include "symbols.hpp"

namespace toolhost::debugger {

// Where separate debug files are looked for besides /usr/lib/debug: the debuginfod client's
// cache ($DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client, else
// ~/.cache/debuginfod_client), whose <build-id>/debuginfo files gdb and debuginfod-find fill.
dwarf::search_paths default_debug_paths();

// Adds the module's DWARF source (first: it knows inline functions, lines and locals) and its
// CFI unwinder to `out`, which holds what the ELF file itself gave. `paths`: folders with
// separate debug files (build-id and debuginfod-cache layouts), besides /usr/lib/debug.
void add_dwarf_symbols(const module& m, const dwarf::search_paths& paths, module_symbols& out);

// A module the target names without a file (the vDSO), whose ELF image is in the target's
// memory at its base: `read` returns up to `size` bytes at an address. nullopt when the memory
// there is not an ELF image.
using image_reader = std::function<absl::StatusOr<std::string>(uint64_t address, size_t size)>;
std::optional<module_symbols> memory_image_symbols(const module& m, const image_reader& read);

}  // namespace toolhost::debugger
