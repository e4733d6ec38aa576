// MASM expressions as WinDbg evaluates them: hexadecimal by default (0x, 0n decimal, 0t octal,
// 0y binary, ` separators), registers (@rax or rax), module!symbol, poi()/by()/wo()/dwo()/
// qwo()/hi()/low(), unary - ~ !, * / % mod, + -, << >> >>>, comparisons (= == != < > <= >=),
// and & xor ^ or |, and parentheses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <absl/status/statusor.h>

namespace toolhost::debugger {

// What an expression can refer to; the session implements it over the target.
class expression_context {
 public:
  virtual ~expression_context() = default;
  // A register's value by name ("rax", "rip", "$ip"), nullopt when there is no such register.
  virtual std::optional<uint64_t> register_value(std::string_view name) = 0;
  // "module!symbol", "symbol" or "module": NotFound when nothing has that name.
  virtual absl::StatusOr<uint64_t> symbol_address(std::string_view name) = 0;
  // `size` (1, 2, 4 or 8) little-endian bytes at `address`.
  virtual absl::StatusOr<uint64_t> read_memory(uint64_t address, int size) = 0;
};

// Evaluates as much of `text` from `pos` as forms one expression and advances `pos` past it
// (and trailing blanks), so "rsp+8 L4" yields rsp+8 and leaves `pos` at "L4".
absl::StatusOr<uint64_t> evaluate_prefix(std::string_view text, size_t& pos, expression_context& context);
// Evaluates all of `text`; trailing text that is not part of the expression is an error.
absl::StatusOr<uint64_t> evaluate(std::string_view text, expression_context& context);

// Parses a MASM number literal alone (as `n` radix 16 would), nullopt when `text` is not one.
std::optional<uint64_t> parse_number(std::string_view text);

}  // namespace toolhost::debugger
