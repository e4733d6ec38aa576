// One stack walker over a per-module unwinder seam (frame_unwinder.hpp; design: stack_walker.md).
// The walker owns the loop, the bounds and the frame-pointer fallback; each module says how to
// find its caller's registers.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "frame_unwinder.hpp"

namespace toolhost::debugger {

struct walked_frame {
  uint64_t pc = 0;
  uint64_t sp = 0;
  unwind_registers regs;                     // what is known of this frame's registers
  frame_origin how = frame_origin::context;  // how this frame was found from the one below
  bool activation = true;                    // pc is exact (frame 0, or interrupted by a signal)
  bool signal_trampoline = false;            // this frame is the kernel's signal return path
};

using unwinder_lookup = std::function<const frame_unwinder*(uint64_t pc)>;

// Walks from `start` (frame 0's registers) for at most `max_frames` frames. Ends where the
// caller's pc is unknown or 0, where an unwinder and the frame-pointer fallback both fail, or
// where the stack would not move up (a cycle or runaway in the unwind data).
std::vector<walked_frame> walk_stack(const unwind_registers& start, const unwinder_lookup& unwinder_at,
                                     const stack_reader& memory, size_t max_frames);

}  // namespace toolhost::debugger
