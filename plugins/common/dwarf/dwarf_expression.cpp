#include "toolhost/dwarf/dwarf_expression.hpp"

#include <dwarf.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace toolhost::dwarf {

namespace {

constexpr size_t kMaxStack = 64;
constexpr int kMaxSteps = 256;
constexpr size_t kMaxPieces = 16;

absl::Status unsupported(unsigned atom) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", atom);
  return absl::UnimplementedError(std::string("the DWARF expression uses operation ") + text +
                                  ", which this debugger does not evaluate");
}

absl::Status malformed(const char* what) {
  return absl::InvalidArgumentError(std::string("malformed DWARF expression: ") + what);
}

}  // namespace

absl::StatusOr<location> evaluate(std::span<const Dwarf_Op> ops, const expression_context& c) {
  std::vector<uint64_t> stack;
  auto pop = [&](uint64_t& v) {
    if (stack.empty()) return false;
    v = stack.back();
    stack.pop_back();
    return true;
  };
  auto reg = [&](uint64_t n) -> std::optional<uint64_t> {
    return c.read_register && n < 4096 ? c.read_register(static_cast<int>(n)) : std::nullopt;
  };
  auto unknown_register = [](uint64_t n) {
    return absl::NotFoundError("register " + std::to_string(n) + " is not known in this frame");
  };
  // The location the operations so far describe (before a DW_OP_piece closes it).
  std::optional<location> pending;
  location result;
  size_t i = 0;
  for (int steps = 0; i < ops.size(); ++steps) {
    if (steps >= kMaxSteps) return absl::ResourceExhaustedError("the DWARF expression runs longer than 256 steps");
    if (stack.size() > kMaxStack) return absl::ResourceExhaustedError("the DWARF expression's stack overflowed");
    const Dwarf_Op& op = ops[i];
    const unsigned a = op.atom;
    uint64_t x = 0, y = 0;
    size_t next = i + 1;
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
      stack.push_back(a - DW_OP_lit0);
    } else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
      auto v = reg(a - DW_OP_breg0);
      if (!v) return unknown_register(a - DW_OP_breg0);
      stack.push_back(*v + op.number);
    } else if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
      pending = location{location::kind::register_, a - DW_OP_reg0, {}, {}};
    } else {
      switch (a) {
        case DW_OP_addr:
        case DW_OP_const1u:
        case DW_OP_const2u:
        case DW_OP_const4u:
        case DW_OP_const8u:
        case DW_OP_constu:
        case DW_OP_const1s:
        case DW_OP_const2s:
        case DW_OP_const4s:
        case DW_OP_const8s:
        case DW_OP_consts: stack.push_back(op.number); break;
        case DW_OP_regx: pending = location{location::kind::register_, op.number, {}, {}}; break;
        case DW_OP_bregx: {
          auto v = reg(op.number);
          if (!v) return unknown_register(op.number);
          stack.push_back(*v + op.number2);
          break;
        }
        case DW_OP_fbreg:
          if (!c.frame_base) return absl::NotFoundError("the frame base is not known here");
          stack.push_back(*c.frame_base + op.number);
          break;
        case DW_OP_call_frame_cfa:
          if (!c.cfa) return absl::NotFoundError("the canonical frame address is not known here");
          stack.push_back(*c.cfa);
          break;
        case DW_OP_dup:
          if (stack.empty()) return malformed("DW_OP_dup on an empty stack");
          stack.push_back(stack.back());
          break;
        case DW_OP_drop:
          if (!pop(x)) return malformed("DW_OP_drop on an empty stack");
          break;
        case DW_OP_over:
          if (stack.size() < 2) return malformed("DW_OP_over needs two entries");
          stack.push_back(stack[stack.size() - 2]);
          break;
        case DW_OP_pick:
          if (op.number >= stack.size()) return malformed("DW_OP_pick past the stack");
          stack.push_back(stack[stack.size() - 1 - op.number]);
          break;
        case DW_OP_swap:
          if (stack.size() < 2) return malformed("DW_OP_swap needs two entries");
          std::swap(stack[stack.size() - 1], stack[stack.size() - 2]);
          break;
        case DW_OP_rot:
          if (stack.size() < 3) return malformed("DW_OP_rot needs three entries");
          std::swap(stack[stack.size() - 1], stack[stack.size() - 2]);
          std::swap(stack[stack.size() - 2], stack[stack.size() - 3]);
          break;
        case DW_OP_deref:
        case DW_OP_deref_size: {
          if (!pop(x)) return malformed("DW_OP_deref on an empty stack");
          const uint64_t size = a == DW_OP_deref ? 8 : op.number;
          if (size < 1 || size > 8) return malformed("DW_OP_deref_size of an odd size");
          auto v = c.read_memory ? c.read_memory(x, static_cast<int>(size)) : std::nullopt;
          if (!v) return absl::NotFoundError("memory the DWARF expression reads is not readable");
          stack.push_back(*v);
          break;
        }
        case DW_OP_plus_uconst:
          if (!pop(x)) return malformed("DW_OP_plus_uconst on an empty stack");
          stack.push_back(x + op.number);
          break;
        case DW_OP_neg:
        case DW_OP_not:
        case DW_OP_abs:
          if (!pop(x)) return malformed("a unary operation on an empty stack");
          stack.push_back(a == DW_OP_neg ? 0 - x : a == DW_OP_not ? ~x : static_cast<int64_t>(x) < 0 ? 0 - x : x);
          break;
        case DW_OP_plus:
        case DW_OP_minus:
        case DW_OP_mul:
        case DW_OP_and:
        case DW_OP_or:
        case DW_OP_xor:
        case DW_OP_shl:
        case DW_OP_shr:
        case DW_OP_shra:
        case DW_OP_div:
        case DW_OP_mod:
        case DW_OP_eq:
        case DW_OP_ne:
        case DW_OP_lt:
        case DW_OP_gt:
        case DW_OP_le:
        case DW_OP_ge: {
          if (!pop(y) || !pop(x)) return malformed("a binary operation needs two entries");
          const auto sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
          uint64_t r = 0;
          switch (a) {
            case DW_OP_plus: r = x + y; break;
            case DW_OP_minus: r = x - y; break;
            case DW_OP_mul: r = x * y; break;
            case DW_OP_and: r = x & y; break;
            case DW_OP_or: r = x | y; break;
            case DW_OP_xor: r = x ^ y; break;
            case DW_OP_shl: r = y >= 64 ? 0 : x << y; break;
            case DW_OP_shr: r = y >= 64 ? 0 : x >> y; break;
            case DW_OP_shra: r = static_cast<uint64_t>(y >= 64 ? (sx < 0 ? -1 : 0) : sx >> y); break;
            case DW_OP_div:
              if (y == 0) return malformed("DW_OP_div by zero");
              // INT64_MIN / -1 overflows; DWARF leaves it undefined, the result is INT64_MIN.
              r = sy == -1 ? 0 - x : static_cast<uint64_t>(sx / sy);
              break;
            case DW_OP_mod:
              if (y == 0) return malformed("DW_OP_mod by zero");
              r = x % y;
              break;
            case DW_OP_eq: r = sx == sy; break;
            case DW_OP_ne: r = sx != sy; break;
            case DW_OP_lt: r = sx < sy; break;
            case DW_OP_gt: r = sx > sy; break;
            case DW_OP_le: r = sx <= sy; break;
            default: r = sx >= sy; break;
          }
          stack.push_back(r);
          break;
        }
        case DW_OP_skip:
        case DW_OP_bra: {
          bool jump = true;
          if (a == DW_OP_bra) {
            if (!pop(x)) return malformed("DW_OP_bra on an empty stack");
            jump = x != 0;
          }
          if (jump) {
            // The operand is a signed byte offset from the end of this 3-byte operation.
            const uint64_t target = op.offset + 3 + op.number;
            size_t k = 0;
            while (k < ops.size() && ops[k].offset != target) ++k;
            if (k == ops.size() && target <= ops.back().offset) return malformed("a branch lands inside an operation");
            next = k;
          }
          break;
        }
        case DW_OP_nop: break;
        case DW_OP_stack_value:
          if (stack.empty()) return malformed("DW_OP_stack_value on an empty stack");
          pending = location{location::kind::value, stack.back(), {}, {}};
          break;
        case DW_OP_implicit_value: {
          auto bytes = c.implicit_value ? c.implicit_value(op) : std::nullopt;
          if (!bytes) return absl::NotFoundError("the implicit value's bytes are not available");
          pending = location{location::kind::implicit, 0, std::move(*bytes), {}};
          break;
        }
        case DW_OP_entry_value:
        case DW_OP_GNU_entry_value: {
          auto v = c.entry_value ? c.entry_value(op) : std::nullopt;
          if (!v) return absl::NotFoundError("the value at the function's entry is not known here");
          stack.push_back(*v);
          break;
        }
        case DW_OP_piece: {
          location part;
          if (pending) {
            part = std::move(*pending);
          } else if (!stack.empty()) {
            part = location{location::kind::memory, stack.back(), {}, {}};
          }  // else: this piece is optimized out
          pending.reset();
          stack.clear();
          if (result.pieces.size() >= kMaxPieces)
            return absl::ResourceExhaustedError("the value has more than 16 pieces");
          result.pieces.push_back({std::move(part), op.number});
          break;
        }
        default: return unsupported(a);
      }
    }
    i = next;
  }
  if (!result.pieces.empty()) {
    result.what = location::kind::composite;
    return result;
  }
  if (pending) return *pending;
  if (stack.empty()) return location{};  // optimized out
  return location{location::kind::memory, stack.back(), {}, {}};
}

}  // namespace toolhost::dwarf
