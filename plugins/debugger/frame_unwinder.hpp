// The seam between the stack walker and a module's unwind data (design: stack_walker.md): given
// one frame's registers, a module's unwinder finds its caller's. ELF modules unwind by DWARF CFI
// (dwarf_symbols.cpp); PE modules' .pdata/UNWIND_INFO can stand behind the same interface.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

namespace toolhost::debugger {

// Registers in DWARF's x86-64 numbering (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
// 8-15 r8-r15, 16 rip); PE unwind codes number them as x86 encodes them (pe_unwinder.cpp maps
// them). nullopt: not known in the frame.
struct unwind_registers {
  static constexpr int kCount = 17;
  std::optional<uint64_t> value[kCount];
};
constexpr int kRegPc = 16, kRegSp = 7, kRegFp = 6;

// How a frame was found from the one below: the registers at the stop, a module's DWARF CFI or
// PE unwind data (.pdata/UNWIND_INFO), or the rbp chain.
enum class frame_origin { context, cfi, unwind_info, frame_pointer };

// `size` (1-8) bytes at `address`, little-endian; nullopt when unreadable.
using stack_reader = std::function<std::optional<uint64_t>(uint64_t address, int size)>;

struct unwinder_step {
  unwind_registers caller;
  bool signal_frame = false;  // the frame unwound was a signal trampoline: the caller's pc is exact
};

class frame_unwinder {
 public:
  virtual ~frame_unwinder() = default;
  // The caller of the frame at `pc` with `regs`; nullopt when this module has nothing for `pc`.
  // `activation`: `pc` is where the frame is executing (frame 0, or a frame a signal
  // interrupted), not a return address.
  virtual std::optional<unwinder_step> unwind(uint64_t pc, bool activation, const unwind_registers& regs,
                                              const stack_reader& memory) const = 0;
  // What the frames this unwinder finds are found by (k's JSON `unwind`).
  virtual frame_origin origin() const { return frame_origin::cfi; }
};

}  // namespace toolhost::debugger
