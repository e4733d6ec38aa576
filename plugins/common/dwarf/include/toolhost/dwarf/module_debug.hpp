// toolhost::dwarf::module_debug: what one loaded ELF module's files say about its code, through
// libdwfl: symbols from .symtab (or only .dynsym) and from its separate debug file, DWARF function
// names with the inline functions at an address, source lines, and one CFI unwind step.
//
//   auto m = module_debug::open("/usr/lib/x86_64-linux-gnu/libc.so.6", load_bias, paths);
//   auto fn = (*m)->functions_at(pc);         // innermost inline first
//   auto caller = (*m)->unwind_step(pc, true, regs, memory);
//
// The separate debug file is found by build-id (`.build-id/xx/rest.debug` under each folder,
// then `<folder>/<build-id>/debuginfo`, the debuginfod client cache's layout) and by
// .gnu_debuglink (beside the file, in .debug/, under each folder). A module is used by one
// thread at a time (libdwfl caches lazily).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::dwarf {

struct search_paths {
  // Folders to look in, in order; /usr/lib/debug is appended when absent.
  std::vector<std::string> folders;
};

struct symbol {
  std::string name;
  uint64_t address = 0;  // in the target's address space
  uint64_t size = 0;
};

struct source_line {
  std::string file;
  int line = 0;
  uint64_t address = 0;  // where the line's code starts
};

// One function at an address: inline functions first (innermost), the out-of-line function last.
struct function_scope {
  std::string name;
  uint64_t entry = 0;  // low_pc / entry_pc in the target's address space
  bool inlined = false;
  std::optional<source_line> call_site;  // for an inline function: where it was inlined
};

// Registers by DWARF number (x86-64: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
// 8-15 r8-r15, 16 the return address).
struct dwarf_registers {
  static constexpr int kCount = 17;
  std::optional<uint64_t> value[kCount];
};

struct unwind_result {
  dwarf_registers caller;  // caller[16] is the caller's pc (return address)
  uint64_t cfa = 0;
  bool signal_frame = false;  // this frame is the kernel's signal trampoline (__restore_rt)
};

using memory_reader = std::function<std::optional<uint64_t>(uint64_t address, int size)>;

class module_debug {
 public:
  ~module_debug();
  module_debug(const module_debug&) = delete;
  module_debug& operator=(const module_debug&) = delete;

  // The file at `path`, loaded with `bias` added to its addresses.
  static absl::StatusOr<std::unique_ptr<module_debug>> open(const std::string& path, uint64_t bias,
                                                           const search_paths& paths);
  // An image that exists only in memory (the vDSO), at `bias`.
  static absl::StatusOr<std::unique_ptr<module_debug>> open_image(const std::string& name, std::string image,
                                                                 uint64_t bias);

  // Where names come from: "symbols, DWARF (debug file /usr/lib/debug/...)", "export symbols".
  std::string symbol_source() const;
  bool has_dwarf() const { return dwarf_ != nullptr; }
  const std::string& debug_file() const { return debug_file_; }

  std::optional<symbol> symbol_at(uint64_t address) const;
  std::optional<symbol> find_symbol(const std::string& name) const;
  // The DWARF scopes at `pc`; empty when no DWARF covers it.
  std::vector<function_scope> functions_at(uint64_t pc) const;
  std::optional<source_line> line_at(uint64_t pc) const;

  // One CFI step: the caller's registers from this frame's. `pc` is the frame's pc; `activation`
  // is false for a caller frame, whose pc is a return address (looked up at pc - 1). nullopt when
  // no CFI covers `pc` (the caller then falls back to something else).
  std::optional<unwind_result> unwind_step(uint64_t pc, bool activation, const dwarf_registers& regs,
                                           const memory_reader& memory) const;

 private:
  module_debug() = default;
  absl::Status attach(const std::string& name, const std::string& path, int fd, uint64_t bias);

  struct state;
  std::unique_ptr<state> state_;
  void* dwarf_ = nullptr;  // Dwarf*, when DWARF was found
  std::string debug_file_;
  std::string name_;
};

}  // namespace toolhost::dwarf
