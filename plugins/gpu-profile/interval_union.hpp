// Busy time as the union of intervals, and the idle gaps between the merged runs.
//
// GPU work overlaps (channels run together, Metal nests encoder rows), so busy time is the
// length of the union, never the sum of durations.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace toolhost::gpu_profile {

using span = std::pair<int64_t, int64_t>;  // [first, second)

// Sorts and merges; touching intervals ([a,b) and [b,c)) become one run, so they leave no gap.
std::vector<span> merge_spans(std::vector<span> spans);

int64_t total_length(const std::vector<span>& merged);

// The idle time between consecutive merged runs (all > 0).
std::vector<int64_t> gaps_between(const std::vector<span>& merged);

// Gap histogram bins: <1 us, 1-5 us, 5-20 us, 20-100 us, 0.1-1 ms, >=1 ms.
inline constexpr std::array<int64_t, 5> kGapBinEdgesNs = {1'000, 5'000, 20'000, 100'000, 1'000'000};
inline constexpr std::array<const char*, 6> kGapBinLabels = {"<1us", "1-5us", "5-20us", "20-100us", "0.1-1ms", ">=1ms"};
std::array<int64_t, 6> gap_histogram(const std::vector<int64_t>& gaps_ns);

}  // namespace toolhost::gpu_profile
