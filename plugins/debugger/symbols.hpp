// Modules and their ELF symbols: "module!symbol" to an address and an address back to
// "module!symbol+0x10". Module names follow WinDbg: the file name up to its first ".so" or
// extension, with '-' and '.' turned into '_' so that expressions can name them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

#include <toolhost/dwarf/module_debug.hpp>
#include <toolhost/elf/elf_file.hpp>

#include "stack_walker.hpp"
#include "target.hpp"

namespace toolhost::debugger {

struct module {
  std::string name;  // "libc", "gdb_demo_program"
  std::string path;
  uint64_t base = 0, size = 0;
  uint64_t bias = 0;  // added to the file's addresses
  std::shared_ptr<const elf::elf_file> elf;  // null when the file cannot be read
  std::string symbol_problem;                // why there are no symbols, if so
  // Full symbol tables, DWARF and CFI (the file's and its separate debug file's), when readable.
  std::shared_ptr<dwarf::module_debug> debug;
  std::shared_ptr<frame_unwinder> unwinder;
};

// One source position for display: "[file @ line]".
std::string source_text(const dwarf::source_line& line);

struct symbol_match {
  std::string name;  // "module!symbol"
  uint64_t address = 0;
};

std::string module_name_of(std::string_view file_name);

class symbol_table {
 public:
  // Replaces the module list (keeps parsed ELF files of unchanged modules). `read_image`
  // supplies an in-memory module's bytes (the vDSO) from the target.
  void set_modules(const std::vector<module_info>& list,
                   const std::function<std::optional<std::string>(const module_info&)>& read_image = {});
  // Folders for separate debug files (build-id and debuginfod-cache layouts).
  void set_debug_paths(dwarf::search_paths paths) { paths_ = std::move(paths); }
  const std::vector<module>& modules() const { return modules_; }
  const module* module_at(uint64_t address) const;
  const module* find_module(std::string_view name) const;

  // "module!symbol", "symbol" (the executable first, then every module) or "module".
  absl::StatusOr<uint64_t> resolve(std::string_view name) const;
  // "module!symbol+0x10", "module+0x1234", or "" when no module holds `address`.
  std::string describe(uint64_t address) const;
  // The function holding `address`: start and size (0 when unknown).
  std::optional<std::pair<uint64_t, uint64_t>> function_at(uint64_t address) const;
  // Symbols whose names match `pattern` ('*' and '?') in modules matching `module_pattern`.
  std::vector<symbol_match> match(std::string_view module_pattern, std::string_view pattern, size_t limit) const;
  // The nearest symbols below and above `address` in its module.
  std::pair<std::optional<symbol_match>, std::optional<symbol_match>> neighbours(uint64_t address) const;

 private:
  std::vector<module> modules_;
  dwarf::search_paths paths_;
};

bool wildcard_match(std::string_view pattern, std::string_view text);

}  // namespace toolhost::debugger
