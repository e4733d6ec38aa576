#include "interval_union.hpp"

#include <algorithm>

namespace toolhost::gpu_profile {

std::vector<span> merge_spans(std::vector<span> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<span> merged;
  for (const span& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

int64_t total_length(const std::vector<span>& merged) {
  int64_t total = 0;
  for (const span& s : merged) total += s.second - s.first;
  return total;
}

std::vector<int64_t> gaps_between(const std::vector<span>& merged) {
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < merged.size(); ++i) gaps.push_back(merged[i].first - merged[i - 1].second);
  return gaps;
}

std::array<int64_t, 6> gap_histogram(const std::vector<int64_t>& gaps_ns) {
  std::array<int64_t, 6> counts{};
  for (int64_t g : gaps_ns) {
    size_t bin = 0;
    while (bin < kGapBinEdgesNs.size() && g >= kGapBinEdgesNs[bin]) ++bin;
    ++counts[bin];
  }
  return counts;
}

}  // namespace toolhost::gpu_profile
