#include "toolhost/kd/read_cache.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace toolhost::kd {

absl::StatusOr<size_t> read_cache::read(uint64_t address, std::span<uint8_t> out, const fetch_fn& fetch) {
  if (out.empty()) return 0;
  if (out.size() > kLargestCached || address + out.size() < address) return fetch(address, out);
  const uint64_t first = address / kBlock, last = (address + out.size() - 1) / kBlock;
  std::vector<uint8_t> span((last - first + 1) * kBlock);
  size_t valid = 0;  // bytes of `span` known, from its start
  for (uint64_t b = first; b <= last;) {
    uint8_t* at = span.data() + (b - first) * kBlock;
    if (auto hit = blocks_.find(b); hit != blocks_.end()) {
      std::memcpy(at, hit->second.data(), kBlock);
      valid += kBlock;
      ++b;
      continue;
    }
    // One request for the run of blocks not held.
    uint64_t end = b + 1;
    while (end <= last && !blocks_.contains(end)) ++end;
    const size_t want = (end - b) * kBlock;
    auto got = fetch(b * kBlock, std::span<uint8_t>(at, want));
    if (!got.ok()) return got.status();
    if (blocks_.size() + (end - b) > kMaxBlocks) blocks_.clear();
    for (size_t i = 0; i < *got / kBlock; ++i) std::memcpy(blocks_[b + i].data(), at + i * kBlock, kBlock);
    valid += *got;
    if (*got < want) break;  // unreadable from there on: what follows is not asked
    b = end;
  }
  const size_t skip = address - first * kBlock;
  const size_t n = valid > skip ? std::min(out.size(), valid - skip) : 0;
  std::memcpy(out.data(), span.data() + skip, n);
  return n;
}

}  // namespace toolhost::kd
