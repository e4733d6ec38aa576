// Loads a snapshot of the Windows-shaped test guest (tests/guest/windows, `winguest-snapshot`):
// `ram.bin` (physical memory from 0, as QEMU's pmemsave wrote it) and `registers.txt` (QEMU's
// `info registers` of processor 0 at the same moment).
#pragma once

#include <string>

#include "sim_machine.h"

namespace kdsim {

// Fills `image` from the snapshot folder `dir`; on failure returns a sentence naming the problem.
std::string load_winguest_image(const std::string& dir, machine_image& image);

}  // namespace kdsim
