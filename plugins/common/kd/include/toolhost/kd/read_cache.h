// What a halted target's memory held, kept between requests until anything may change it.
//
// Every KD request is a round trip, milliseconds on a serial line, and a debugger that walks
// Windows' structures through its own page-table walk reads the same page-table pages and the
// same EPROCESS page again and again. While the target is halted its memory only changes by our
// own writes, so reads are served from 1 KiB blocks fetched once; the target clears the cache at
// every stop, resume and write. Thread: one reader at a time (the target's request lock).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>

#include <absl/status/statusor.h>

namespace toolhost::kd {

class read_cache {
 public:
  static constexpr size_t kBlock = 1024;
  // Reads larger than this bypass the cache (a dump or a big `db` gains nothing by it).
  static constexpr size_t kLargestCached = 4 * kBlock;
  static constexpr size_t kMaxBlocks = 2048;  // 2 MiB; past it the cache starts over

  // Reads the target: bytes read from `address` on, short at the first unreadable byte.
  using fetch_fn = std::function<absl::StatusOr<size_t>(uint64_t address, std::span<uint8_t> into)>;

  // As `fetch` would answer for [address, address + out.size()), from the cache where it can.
  absl::StatusOr<size_t> read(uint64_t address, std::span<uint8_t> out, const fetch_fn& fetch);
  void clear() { blocks_.clear(); }
  size_t blocks() const { return blocks_.size(); }

 private:
  std::unordered_map<uint64_t, std::array<uint8_t, kBlock>> blocks_;  // by block number
};

}  // namespace toolhost::kd
