// toolhost::dwarf::module_debug: what one loaded ELF module's files say about its code, through
// libdwfl: symbols from .symtab (or only .dynsym) and from its separate debug file, DWARF function
// names with the inline functions at an address, source lines, one CFI unwind step, the
// variables in scope at a pc and the module's types (in toolhost::types' neutral model).
//
//   auto m = module_debug::open("/usr/lib/x86_64-linux-gnu/libc.so.6", load_base, paths);
//   auto fn = (*m)->functions_at(pc);         // innermost inline first
//   auto caller = (*m)->unwind_step(pc, true, regs, memory);
//
// Addresses are the target's: `load_base` is where the file's lowest loadable page landed. The separate debug file is
// found by build-id (`.build-id/xx/rest.debug` under each folder, then `<folder>/<build-id>/debuginfo`, the debuginfod
// client cache's layout) and by .gnu_debuglink (beside the file, in .debug/, under each folder). A module is used by
// one thread at a time (libdwfl caches lazily).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

#include <toolhost/types/type.hpp>

namespace toolhost::dwarf {

struct search_paths {
  // Folders to look in, in order; /usr/lib/debug is appended when absent.
  std::vector<std::string> folders;
};

struct symbol {
  std::string name;
  uint64_t address = 0;  // in the target's address space
  uint64_t size = 0;
  bool function = false;
};

struct source_line {
  std::string file;
  int line = 0;
  uint64_t address = 0;  // where the line's code starts (0 for a call site)
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

class module_debug;

// What the stack walk knows of one frame, for evaluating its variables.
struct frame_view {
  uint64_t pc = 0;
  bool activation = true;  // pc is exact (frame 0, or a frame a signal interrupted), not a return address
  dwarf_registers regs;
  size_t inline_depth = 0;  // 0: the innermost function at pc; 1: the one it is inlined into; ...
  // The caller's frame and module, for values at the function's entry (its call site's
  // parameters); null when unknown.
  const frame_view* caller = nullptr;
  const module_debug* caller_module = nullptr;
};

struct variable {
  std::string name;
  bool parameter = false;
  types::type_id type = types::kNoType;  // in the module's types()
  enum class state { memory, bytes, unavailable } where = state::unavailable;
  uint64_t address = 0;  // memory: where the value lives
  std::string bytes;     // bytes: the value itself, little-endian, as many bytes as the type's size
  std::string problem;   // unavailable: why ("optimized out", "register 3 is not known in this frame")
};

class module_debug {
 public:
  ~module_debug();
  module_debug(const module_debug&) = delete;
  module_debug& operator=(const module_debug&) = delete;

  // The file at `path`, its lowest loadable page at `load_base`.
  static absl::StatusOr<std::unique_ptr<module_debug>> open(const std::string& path, uint64_t load_base,
                                                            const search_paths& paths);
  // An image that exists only in memory (the vDSO), loaded at `load_base`.
  static absl::StatusOr<std::unique_ptr<module_debug>> open_image(const std::string& name, std::string image,
                                                                  uint64_t load_base);

  bool has_dwarf() const { return dwarf_ != nullptr; }
  // Whether the names come from a full symbol table (.symtab here or in the debug file).
  bool full_symbols() const;
  // The separate debug file, when one was found; "" otherwise.
  const std::string& debug_file() const { return debug_file_; }
  const std::string& file() const { return file_; }

  // Every named function and object symbol, sorted by address (built on first use).
  const std::vector<symbol>& symbols() const;
  std::optional<symbol> symbol_at(uint64_t address) const;
  // The DWARF scopes at `pc`; empty when no DWARF covers it.
  std::vector<function_scope> functions_at(uint64_t pc) const;
  std::optional<source_line> line_at(uint64_t pc) const;

  // One CFI step: the caller's registers from this frame's. `pc` is the frame's pc; `activation`
  // is false for a caller frame, whose pc is a return address (looked up at pc - 1). nullopt when
  // no CFI covers `pc` (the caller then falls back to something else).
  std::optional<unwind_result> unwind_step(uint64_t pc, bool activation, const dwarf_registers& regs,
                                           const memory_reader& memory) const;

  // The parameters and locals in scope at the frame (parameters first, then locals from the
  // innermost block out, each in declaration order). Empty when DWARF does not cover the pc.
  std::vector<variable> variables(const frame_view& frame, const memory_reader& memory) const;

  // The frames tail calls left no trace of: the call that returns to `return_pc` entered a
  // function that tail-called on (through DWARF call-site information) until `callee_entry`.
  // The tail-call sites' return addresses, innermost first (the one that jumped to
  // `callee_entry`); empty when the call reached `callee_entry` directly or the chain is unknown.
  // Where several chains are possible, only their common ends are given, as gdb does.
  std::vector<uint64_t> tail_calls(uint64_t return_pc, uint64_t callee_entry) const;

  // The module's types; null without DWARF.
  const types::type_table* types() const;

 private:
  friend struct call_site_access;
  module_debug();
  absl::Status attach(const std::string& name, const std::string& path, int fd, uint64_t load_base);
  // Whether libdw may execute the module's .eh_frame (0) or .debug_frame (1): checked once.
  bool cfi_usable(int which) const;

  struct state;
  std::unique_ptr<state> state_;
  void* dwarf_ = nullptr;  // Dwarf*, when DWARF was found
  std::string debug_file_;
  std::string file_;
};

}  // namespace toolhost::dwarf
