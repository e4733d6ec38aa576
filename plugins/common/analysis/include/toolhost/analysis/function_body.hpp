// toolhost::analysis: one function's instructions and basic blocks, decoded on demand.
//
// The function's extent is swept linearly (so the cases of a switch reached only through a
// jump table are still there), padding after its last instruction is dropped, and the
// instructions are cut into basic blocks at branch targets inside the function and after
// every branch, return or trap. Calls do not end a block.
#pragma once

#include <cstdint>
#include <vector>

#include <toolhost/disasm/decoder.hpp>

#include "toolhost/analysis/functions.hpp"
#include "toolhost/analysis/image.hpp"

namespace toolhost::analysis {

struct basic_block {
  uint64_t start = 0;
  uint64_t end = 0;                  // exclusive
  std::vector<uint64_t> successors;  // direct targets and fall-through, sorted; none after ret,
                                     // traps and jumps through registers or memory
};

struct function_body {
  std::vector<disasm::instruction> instructions;
  std::vector<basic_block> blocks;
  bool truncated = false;  // the function has more instructions than were asked for
};

// Up to `max_instructions` instructions of `f` (blocks cover what was decoded).
function_body decode_function(const image& img, const function& f, size_t max_instructions);

}  // namespace toolhost::analysis
