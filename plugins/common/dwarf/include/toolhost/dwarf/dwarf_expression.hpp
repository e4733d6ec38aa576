// toolhost::dwarf: evaluating DWARF expressions (DWARF 5 section 2.5 and 2.6) as CFI rules and
// location descriptions use them, over registers and memory the caller supplies.
//
//   auto r = evaluate(ops, {.read_register = ..., .read_memory = ..., .cfa = cfa});
//   if (r.ok() && r->what == location::kind::memory) ... r->value is the address
//
// Stateless; callable from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

#include <elfutils/libdw.h>

namespace toolhost::dwarf {

struct expression_context {
  // A register by DWARF number; nullopt when unknown (the expression then fails).
  std::function<std::optional<uint64_t>(int)> read_register;
  // `size` (1-8) bytes at `address`; nullopt when unreadable.
  std::function<std::optional<uint64_t>(uint64_t address, int size)> read_memory;
  std::optional<uint64_t> cfa;         // DW_OP_call_frame_cfa
  std::optional<uint64_t> frame_base;  // DW_OP_fbreg
  // DW_OP_implicit_value's bytes (they live in the attribute, not in the operation).
  std::function<std::optional<std::string>(const Dwarf_Op&)> implicit_value;
  // DW_OP_entry_value / DW_OP_GNU_entry_value: the value its sub-expression had when the
  // function was entered (from the caller's call site); nullopt when not known.
  std::function<std::optional<uint64_t>(const Dwarf_Op&)> entry_value;
};

struct location {
  enum class kind {
    memory,       // value: the address
    register_,    // value: the DWARF register number
    value,        // value: the value itself (DW_OP_stack_value)
    implicit,     // bytes: the value's bytes (DW_OP_implicit_value)
    unavailable,  // optimized out (an empty expression or piece)
    composite,    // pieces, in order from the value's lowest byte
  } what = kind::unavailable;
  uint64_t value = 0;
  std::string bytes;
  struct piece;
  std::vector<piece> pieces;
};

struct location::piece {
  location where;     // memory, register_, value, implicit or unavailable
  uint64_t size = 0;  // bytes
};

// At most 256 operations run (a backward DW_OP_skip cannot loop for ever), the stack holds 64
// entries and a value has at most 16 pieces. Unsupported operations (TLS, typed stack entries)
// fail with a sentence naming the operation.
absl::StatusOr<location> evaluate(std::span<const Dwarf_Op> ops, const expression_context& context);

}  // namespace toolhost::dwarf
