// The seam between a module and where its symbols come from. A module has symbol sources, best
// first: DWARF with the full symbol tables (the file's or its separate debug file's), an ELF
// file's .symtab/.dynsym, a PE image's exports, a PDB; more can be added without touching the
// commands. A provider is asked once per
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

#include "frame_unwinder.hpp"

namespace toolhost::debugger {

struct symbol_hit {
  std::string name;  // without the module: "NtCreateFile"
  uint64_t offset = 0;
  uint64_t size = 0;  // 0 when the source does not know the extent
  bool function = false;
};

// A source position: file and line, and where the line's code starts (a module offset; 0 for a
// call site).
struct source_position {
  std::string file;
  int line = 0;
  uint64_t offset = 0;
};

// "[/src/stack.c @ 29]", as WinDbg writes a source position.
inline std::string source_text(const source_position& p) { return "[" + p.file + " @ " + std::to_string(p.line) + "]"; }

// One function at an offset as debug information names it. A source that knows inline
// functions lists the inline ones first (innermost), the out-of-line function last.
struct scope_hit {
  std::string name;
  uint64_t entry = 0;  // module offset of the function's entry
  bool inlined = false;
  std::optional<source_position> call_site;  // an inline function: where it was inlined
};

// One frame of a stack walk, for the variables in scope there.
struct frame_query {
  uint64_t offset = 0;      // the frame's pc, module-relative
  bool activation = true;   // the pc is exact (frame 0, an interrupted frame), not a return address
  unwind_registers regs;    // what the walk knows of the frame's registers
  size_t inline_depth = 0;  // 0: the innermost function at the pc; 1: the one it is inlined into ...
  const stack_reader* memory = nullptr;
  // The caller's frame and its module's source (values at the function's entry come from the
  // caller's call site); null when unknown.
  const frame_query* caller = nullptr;
  const class symbol_source* caller_source = nullptr;
};

// A parameter or local and where its value is.
struct variable_value {
  std::string name;
  bool parameter = false;
  types::type_id type = types::kNoType;  // in the source's types()
  enum class state { memory, bytes, unavailable } where = state::unavailable;
  uint64_t address = 0;  // memory: the target address of the value
  std::string bytes;     // bytes: the value itself (little-endian, the type's size)
  std::string problem;   // unavailable: why ("optimized out")
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

  // Sources with line and scope information (DWARF, a private PDB) answer these; the others
  // keep the defaults.
  // The source line holding `offset`.
  virtual std::optional<source_position> line_at(uint64_t) const { return std::nullopt; }
  // The functions at `offset`, inline ones first; empty when unknown.
  virtual std::vector<scope_hit> scopes_at(uint64_t) const { return {}; }
  // The parameters (first) and locals in scope in the frame; empty when unknown.
  virtual std::vector<variable_value> variables(const frame_query&) const { return {}; }
  // Frames tail calls left no trace of between a call returning to `return_offset` and the
  // function at `callee_entry` it reached: the tail-call sites' return offsets, innermost first.
  virtual std::vector<uint64_t> tail_calls(uint64_t /*return_offset*/, uint64_t /*callee_entry*/) const { return {}; }
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
  // How the stack walker finds a caller in this module (CFI for ELF modules); null: the
  // walker's frame-pointer fallback.
  std::shared_ptr<const frame_unwinder> unwinder;
};

}  // namespace toolhost::debugger
