// toolhost::analysis: where an image's functions start and end, and what they are called.
//
// Starts come from the symbol table, the entry point (and the main() the entry code hands to
// libc), what the loader calls (DT_INIT, init arrays), the targets of direct calls and of
// jumps that leave a function (tail calls), code whose address is taken where a function would
// start (after padding), the exception tables, and the import stubs (PLT
// entries, import thunks), which take their import's name the way Ghidra and objdump name them.
// A function nothing names is FUN_<address>, like Ghidra's. Ends come from symbol sizes, then
// exception-table extents, then the next function or the end of the section.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <toolhost/disasm/reference_scan.hpp>

#include "toolhost/analysis/image.hpp"

namespace toolhost::analysis {

// Why the analysis believes a function starts somewhere (a bit set; one start may have several).
enum function_source : uint32_t {
  from_symbol = 1u << 0,
  from_entry = 1u << 1,
  from_main = 1u << 2,
  from_call = 1u << 3,
  from_unwind = 1u << 4,
  from_import_stub = 1u << 5,
  from_user = 1u << 6,       // the person said so (eleven's set_code_type procedure)
  from_loader = 1u << 7,     // DT_INIT, DT_FINI, init/fini arrays, TLS callbacks
  from_tail_jump = 1u << 8,  // a direct jmp leaves another function for it
  from_pointer = 1u << 9,    // code takes its address (a callback) and it follows alignment padding
};

struct function {
  uint64_t address = 0;
  uint64_t end = 0;  // one past the last byte attributed to it
  std::string name;
  uint32_t sources = 0;
  bool named_by_symbol = false;
  bool end_known = false;  // `end` comes from the file (a symbol size, an FDE, a stub's jump)
  // An import stub: the slot it jumps through, and the import the loader puts there.
  std::optional<uint64_t> thunk_slot;
  bool from(function_source s) const noexcept { return (sources & s) != 0; }
  bool is_thunk() const noexcept { return thunk_slot.has_value(); }
  bool contains(uint64_t a) const noexcept { return a >= address && a < end; }
};

// Function starts known before any code is decoded (symbols, entry, exception tables): where
// the sweep restarts. Sorted, unique, each inside an executable section.
std::vector<uint64_t> known_function_starts(const image& img);

class function_table {
 public:
  function_table() = default;
  // Everything above, from the image and its sweep's references (sorted by `from`).
  static function_table discover(const image& img, std::span<const disasm::code_reference> references);

  // A copy with these starts added (FUN_<address> unless something names them already) and the
  // ends recomputed. Starts outside the image's sections are ignored.
  function_table with_starts(const image& img, const std::set<uint64_t>& starts, function_source why) const;

  const std::vector<function>& all() const noexcept { return functions_; }  // sorted by address
  const function* starting(uint64_t address) const noexcept;
  const function* containing(uint64_t address) const noexcept;
  // By exact name; the lowest address wins when several functions share one.
  const function* named(std::string_view name) const noexcept;
  // Every function with this exact name, by address.
  std::vector<const function*> all_named(std::string_view name) const;

 private:
  void finish(const image& img);

  std::vector<function> functions_;
  std::vector<uint32_t> by_name_;  // indexes into functions_, sorted by (name, address)
};

}  // namespace toolhost::analysis
