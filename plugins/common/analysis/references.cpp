#include "toolhost/analysis/references.hpp"

#include <algorithm>

namespace toolhost::analysis {

reference_index::reference_index(std::vector<disasm::code_reference> references) : refs_(std::move(references)) {
  // Sorting (target, position) pairs touches memory in order; sorting bare positions by
  // refs_[i].to would fetch a reference at random for every comparison.
  std::vector<std::pair<uint64_t, uint32_t>> keyed(refs_.size());
  for (uint32_t i = 0; i < keyed.size(); ++i) keyed[i] = {refs_[i].to, i};
  std::sort(keyed.begin(), keyed.end());  // ties keep source order: positions follow `from`
  by_to_.resize(keyed.size());
  for (size_t i = 0; i < keyed.size(); ++i) by_to_[i] = keyed[i].second;
}

std::span<const disasm::code_reference> reference_index::from(uint64_t start, uint64_t end) const noexcept {
  const auto less = [](const disasm::code_reference& r, uint64_t a) { return r.from < a; };
  auto first = std::lower_bound(refs_.begin(), refs_.end(), start, less);
  auto last = std::lower_bound(first, refs_.end(), end, less);
  return {first, last};
}

std::pair<size_t, size_t> reference_index::to(uint64_t start, uint64_t end) const noexcept {
  const auto less = [this](uint32_t i, uint64_t a) { return refs_[i].to < a; };
  auto first = std::lower_bound(by_to_.begin(), by_to_.end(), start, less);
  auto last = std::lower_bound(first, by_to_.end(), end, less);
  return {static_cast<size_t>(first - by_to_.begin()), static_cast<size_t>(last - by_to_.begin())};
}

}  // namespace toolhost::analysis
