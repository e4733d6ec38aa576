// toolhost::analysis: the function extents an ELF .eh_frame section describes. Every FDE
// (frame description entry) names the code range it unwinds, which for compiled code is one
// function (or a cold part split off one), so a stripped binary still tells where its
// functions start and end.
//
// The section comes from the file and is untrusted: lengths, CIE pointers and pointer
// encodings are checked against the section's bounds, and an entry that does not parse ends
// the walk (what was read before it is kept).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "toolhost/analysis/image.hpp"

namespace toolhost::analysis {

// `bytes` is the section's contents, loaded at `address`; `pointer_size` is 4 or 8.
// Extents come back in section order.
std::vector<code_extent> parse_eh_frame(std::span<const uint8_t> bytes, uint64_t address, unsigned pointer_size);

}  // namespace toolhost::analysis
