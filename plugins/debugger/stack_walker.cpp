#include "stack_walker.hpp"

namespace toolhost::debugger {

namespace {

// rbp chain: [rbp] is the caller's rbp, [rbp+8] its return address.
std::optional<unwinder_step> by_frame_pointer(const unwind_registers& regs, const stack_reader& memory) {
  const auto fp = regs.value[kRegFp];
  const auto sp = regs.value[kRegSp];
  if (!fp || !sp || *fp < *sp || *fp - *sp > (64u << 20) || (*fp & 7) != 0) return std::nullopt;
  auto saved_fp = memory(*fp, 8);
  auto ret = memory(*fp + 8, 8);
  if (!saved_fp || !ret) return std::nullopt;
  unwinder_step step;
  step.caller.value[kRegFp] = *saved_fp;
  step.caller.value[kRegPc] = *ret;
  step.caller.value[kRegSp] = *fp + 16;
  // Callee-saved registers other than rbp are unknown without unwind data.
  return step;
}

}  // namespace

std::vector<walked_frame> walk_stack(const unwind_registers& start, const unwinder_lookup& unwinder_at,
                                     const stack_reader& memory, size_t max_frames) {
  std::vector<walked_frame> frames;
  if (!start.value[kRegPc] || !start.value[kRegSp] || max_frames == 0) return frames;
  walked_frame current;
  current.pc = *start.value[kRegPc];
  current.sp = *start.value[kRegSp];
  current.regs = start;
  frames.push_back(current);
  while (frames.size() < max_frames) {
    const walked_frame& f = frames.back();
    const frame_unwinder* unwinder = unwinder_at(f.pc);
    std::optional<unwinder_step> step;
    frame_origin how = unwinder != nullptr ? unwinder->origin() : frame_origin::cfi;
    if (unwinder != nullptr) step = unwinder->unwind(f.pc, f.activation, f.regs, memory);
    if (!step) {
      step = by_frame_pointer(f.regs, memory);
      how = frame_origin::frame_pointer;
    }
    if (!step || !step->caller.value[kRegPc] || !step->caller.value[kRegSp]) break;
    walked_frame next;
    next.pc = *step->caller.value[kRegPc];
    next.sp = *step->caller.value[kRegSp];
    next.regs = step->caller;
    next.how = how;
    next.activation = step->signal_frame;
    if (next.pc == 0) break;
    // The stack grows down: a caller lives above its callee. A signal frame's interrupted
    // context may sit on another stack (sigaltstack), so it is exempt; a repeat is not.
    if (!step->signal_frame && next.sp <= f.sp) break;
    if (next.pc == f.pc && next.sp == f.sp) break;
    frames.back().signal_trampoline = step->signal_frame;
    frames.push_back(next);
  }
  return frames;
}

}  // namespace toolhost::debugger
