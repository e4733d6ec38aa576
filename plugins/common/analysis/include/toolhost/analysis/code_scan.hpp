// toolhost::analysis: one linear sweep over every executable section of an image, on several
// threads, collecting what each instruction references (calls, jumps, data, slots).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <absl/status/statusor.h>
#include <toolhost/disasm/reference_scan.hpp>

#include "toolhost/analysis/image.hpp"

namespace toolhost::analysis {

// How far a long piece of work has come; written by the workers, read by anyone.
struct work_meter {
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> total{0};
};

struct code_scan {
  std::vector<disasm::code_reference> references;  // sorted by `from`
  uint64_t instructions = 0;
  uint64_t undecodable = 0;
  uint64_t code_bytes = 0;
};

// The decoder mode for the image's architecture; nullopt when it is not x86.
std::optional<disasm::mode> decoding_mode(const image& img);
// The address ranges the image's sections map, for the scanner's idea of an address.
std::vector<disasm::address_range> mapped_ranges(const image& img);

// Sweeps every executable section the file holds bytes for, restarting at `starts` (sorted
// function starts). Splits the work at those starts over `threads` threads; the result is
// the same for any thread count. Adds the bytes it swept to `meter`. Fails with Cancelled when
// `cancel` becomes true, and with FailedPrecondition for an image that is not x86.
absl::StatusOr<code_scan> scan_code(const image& img, std::span<const uint64_t> starts, unsigned threads,
                                    work_meter* meter = nullptr, const std::atomic<bool>* cancel = nullptr);

}  // namespace toolhost::analysis
