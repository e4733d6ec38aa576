// The seam between a module and where its symbols come from. A module has symbol sources, best
// first: an ELF file's .symtab/.dynsym, a PE image's exports, a PDB; more can be added (DWARF,
// a debuglink or build-id file) without touching the commands. A provider is asked once per
// module, when its symbols are first needed, and says which sources it found (or why none).
//
// Offsets are module-relative (an RVA for PE; address - module base for ELF): a source never
// needs to know where its module was loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <toolhost/pe/image.hpp>
#include <toolhost/types/type.hpp>

namespace toolhost::debugger {

struct symbol_hit {
  std::string name;  // without the module: "NtCreateFile"
  uint64_t offset = 0;
  uint64_t size = 0;  // 0 when the source does not know the extent
  bool function = false;
};

class symbol_source {
 public:
  virtual ~symbol_source() = default;
  // What `lm` says the module has: "pdb symbols", "private pdb symbols", "export symbols", "symbols".
  virtual std::string status() const = 0;
  // The file the symbols came from (lm's last column); may be empty.
  virtual std::string file() const = 0;
  // A symbol by name: an exact match first, else a case-insensitive one (WinDbg's default).
  virtual std::optional<symbol_hit> find(std::string_view name) const = 0;
  // The symbol at or below `offset` that best names it (a function holding it, else the
  // nearest); nullopt when nothing precedes it.
  virtual std::optional<symbol_hit> nearest(uint64_t offset) const = 0;
  // The first symbol strictly above `offset`.
  virtual std::optional<symbol_hit> following(uint64_t offset) const = 0;
  // The function whose extent holds `offset`, with its size; nullopt when none is known.
  virtual std::optional<symbol_hit> function_at(uint64_t offset) const = 0;
  // Every symbol whose name matches `pattern` (* and ?, case-insensitive), until `visit`
  // returns false.
  virtual void match(std::string_view pattern, const std::function<bool(const symbol_hit&)>& visit) const = 0;
  // The types this source knows (a PDB, DWARF); nullptr when it has none.
  virtual const types::type_table* types() const { return nullptr; }
};

using symbol_sources = std::vector<std::shared_ptr<const symbol_source>>;

// What a provider found for one module.
struct module_symbols {
  symbol_sources sources;  // best first
  std::string problem;     // why the best possible symbols are missing (shown by lm v and .reload)
  // Facts about the image for lmv / !lmi, in order: {"Image name", "ntoskrnl.exe"}, {"Timestamp", ...}.
  std::vector<std::pair<std::string, std::string>> facts;
  // The PE image the sources were read from (headers, .pdata for unwinding); null for others.
  std::shared_ptr<const pe::image> pe_image;
};

}  // namespace toolhost::debugger
