// toolhost::dwarf: evaluating DWARF expressions (DWARF 5 section 2.5) as CFI rules and location
// descriptions use them, over registers and memory the caller supplies.
//
//   auto r = evaluate(ops, n, {.read_register = ..., .read_memory = ..., .cfa = cfa});
//   if (r.ok() && r->kind == location::memory) ... r->value is the address
//
// Stateless; callable from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

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
};

struct location {
  enum class kind { memory, register_, value } what = kind::value;
  uint64_t value = 0;  // the address, the register number or the value itself
};

// At most 256 operations run (a backward DW_OP_skip cannot loop for ever) and the stack holds
// 64 entries. Unsupported operations (entry values, TLS, pieces past the first) fail with a
// sentence naming the operation.
absl::StatusOr<location> evaluate(std::span<const Dwarf_Op> ops, const expression_context& context);

}  // namespace toolhost::dwarf
