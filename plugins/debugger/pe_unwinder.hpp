// The x64 PE unwinder: a module's .pdata (RUNTIME_FUNCTION) and UNWIND_INFO, applied as Windows'
// RtlVirtualUnwind applies them, behind the stack walker's seam (frame_unwinder.hpp).
#pragma once

#include <memory>

#include <toolhost/pe/image.hpp>

#include "frame_unwinder.hpp"

namespace toolhost::debugger {

// Null when the image is not x64 or has no readable .pdata (the walker then follows rbp).
// `base` is where the image is loaded; the image may be a file or the loaded image in memory.
std::shared_ptr<const frame_unwinder> make_pe_unwinder(std::shared_ptr<const pe::image> image, uint64_t base);

}  // namespace toolhost::debugger
