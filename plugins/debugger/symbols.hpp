// Modules and their symbols: "module!symbol" to an address and an address back to
// "module!symbol+0x10". Module names follow WinDbg: the file name up to its first ".so" or
// extension, with '-' and '.' turned into '_' so that expressions can name them; the Windows
// kernel (ntoskrnl.exe and its variants) is "nt".
//
// A module's symbols are loaded when first needed (WinDbg's "deferred"), through the loader the
// session sets: it asks each symbol provider (symbol_source.hpp) for the module's sources.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

#include "symbol_source.hpp"
#include "target.hpp"

namespace toolhost::debugger {

enum class symbol_state { deferred, loaded };

struct module {
  std::string name;  // "libc", "gdb_demo_program", "nt"
  std::string path;  // as the target names the file
  uint64_t base = 0, size = 0;
  // Filled when loaded (lazily, hence mutable: looking a symbol up may load its module).
  mutable symbol_state state = symbol_state::deferred;
  mutable module_symbols symbols;

  bool contains(uint64_t address) const { return address >= base && address - base < std::max<uint64_t>(size, 1); }
  // The best source, or null when the module has none (or is not loaded yet).
  const symbol_source* best() const { return symbols.sources.empty() ? nullptr : symbols.sources.front().get(); }
};

struct symbol_match {
  std::string name;  // "module!symbol"
  uint64_t address = 0;
  uint64_t size = 0;
};

std::string module_name_of(std::string_view file_name);

class symbol_table {
 public:
  // Loads one module's symbols (fills m.symbols). Called at most once per module and load.
  using loader = std::function<module_symbols(const module& m)>;
  void set_loader(loader l) { loader_ = std::move(l); }

  // Replaces the module list; a module whose name, path, base and size did not change keeps
  // what was loaded for it.
  void set_modules(const std::vector<module_info>& list);
  const std::vector<module>& modules() const { return modules_; }
  const module* module_at(uint64_t address) const;
  const module* find_module(std::string_view name) const;
  // Loads `m` now if it is deferred.
  const module& ensure_loaded(const module& m) const;
  // Back to deferred (.reload): every module, or those whose name matches `pattern`. Returns
  // how many.
  size_t unload(std::string_view pattern = "*");

  // "module!symbol", "symbol" (loaded modules first, then the deferred ones in order) or
  // "module" (its base).
  absl::StatusOr<uint64_t> resolve(std::string_view name) const;
  // "module!symbol+0x10", "module+0x1234", or "" when no module holds `address`.
  std::string describe(uint64_t address) const;
  // The same for a return address: named by `name_at` (the call, address - 1), with the offset
  // of `address` itself, so that a call that ends its function is not named by the next one.
  std::string describe(uint64_t address, uint64_t name_at) const;
  // The source line of the code at `address`, from the first source that knows it.
  std::optional<source_position> line_at(uint64_t address) const;
  // The function holding `address`: start and size (0 when unknown).
  std::optional<std::pair<uint64_t, uint64_t>> function_at(uint64_t address) const;
  // Symbols whose names match `pattern` ('*' and '?') in modules matching `module_pattern`.
  std::vector<symbol_match> match(std::string_view module_pattern, std::string_view pattern, size_t limit) const;
  // The nearest symbols below and above `address` in its module.
  std::pair<std::optional<symbol_match>, std::optional<symbol_match>> neighbours(uint64_t address) const;

 private:
  std::vector<module> modules_;
  loader loader_;
};

bool wildcard_match(std::string_view pattern, std::string_view text);
std::string lower_case(std::string_view s);

}  // namespace toolhost::debugger
