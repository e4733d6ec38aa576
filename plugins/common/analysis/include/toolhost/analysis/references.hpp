// toolhost::analysis: every reference the code makes, found by source and by target.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <toolhost/disasm/reference_scan.hpp>

namespace toolhost::analysis {

class reference_index {
 public:
  reference_index() = default;
  // `references` sorted by `from`, as the sweep produces them.
  explicit reference_index(std::vector<disasm::code_reference> references);

  size_t size() const noexcept { return refs_.size(); }
  std::span<const disasm::code_reference> all() const noexcept { return refs_; }

  // References made by instructions in [start, end), by source address.
  std::span<const disasm::code_reference> from(uint64_t start, uint64_t end) const noexcept;

  // References to targets in [start, end), ordered by (target, source): positions [first,
  // last) into `by_target`.
  std::pair<size_t, size_t> to(uint64_t start, uint64_t end) const noexcept;
  std::pair<size_t, size_t> to(uint64_t address) const noexcept { return to(address, address + 1); }
  const disasm::code_reference& by_target(size_t position) const noexcept { return refs_[by_to_[position]]; }

 private:
  std::vector<disasm::code_reference> refs_;
  std::vector<uint32_t> by_to_;  // indexes into refs_, sorted by (to, from)
};

}  // namespace toolhost::analysis
