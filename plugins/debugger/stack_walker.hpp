// One stack walker over a per-module unwinder seam (design: stack_walker.md). The walker owns
// the loop, the bounds and the fallback; each module says how to find its caller's registers
// (DWARF CFI for ELF modules today, .pdata/UNWIND_INFO for PE modules behind the same seam).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <toolhost/dwarf/module_debug.hpp>

namespace toolhost::debugger {

// Registers in DWARF's x86-64 numbering (0 rax ... 7 rsp, 8-15 r8-r15, 16 rip); PE unwind codes
// name the same registers.
using unwind_registers = dwarf::dwarf_registers;
constexpr int kRegPc = 16, kRegSp = 7, kRegFp = 6;

struct unwinder_step {
  unwind_registers caller;
  bool signal_frame = false;  // the frame unwound was a signal trampoline: the caller's pc is exact
};

// The seam: one module's way of finding a caller. nullopt when it has nothing for `pc`.
class frame_unwinder {
 public:
  virtual ~frame_unwinder() = default;
  // `activation`: `pc` is where the frame is executing (frame 0, or a frame a signal interrupted),
  // not a return address.
  virtual std::optional<unwinder_step> unwind(uint64_t pc, bool activation, const unwind_registers& regs,
                                              const dwarf::memory_reader& memory) const = 0;
};

enum class frame_origin { context, cfi, frame_pointer };

struct walked_frame {
  uint64_t pc = 0;
  uint64_t sp = 0;
  unwind_registers regs;       // what is known of this frame's registers
  frame_origin how = frame_origin::context;  // how this frame was found from the one below
  bool activation = true;      // pc is exact (frame 0, or interrupted by a signal)
  bool signal_trampoline = false;  // this frame is the kernel's signal return path
};

using unwinder_lookup = std::function<const frame_unwinder*(uint64_t pc)>;

// Walks from `start` (frame 0's registers) for at most `max_frames` frames. Ends where the
// caller's pc is unknown or 0, where an unwinder and the frame-pointer fallback both fail, or
// where the stack would not move up (a cycle or runaway in the unwind data).
std::vector<walked_frame> walk_stack(const unwind_registers& start, const unwinder_lookup& unwinder_at,
                                     const dwarf::memory_reader& memory, size_t max_frames);

// The ELF modules' unwinder: CFI from .eh_frame / .debug_frame through libdw.
class cfi_unwinder final : public frame_unwinder {
 public:
  explicit cfi_unwinder(const dwarf::module_debug& debug) : debug_(debug) {}
  std::optional<unwinder_step> unwind(uint64_t pc, bool activation, const unwind_registers& regs,
                                      const dwarf::memory_reader& memory) const override;

 private:
  const dwarf::module_debug& debug_;
};

}  // namespace toolhost::debugger
