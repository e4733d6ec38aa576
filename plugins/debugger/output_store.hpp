// Long results: kept by id (newest 64 MB, oldest dropped first) and read back by line offset
// or by a case-insensitive filter, the way ntoseye's `output` tool pages them.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::debugger {

class output_store {
 public:
  static constexpr size_t kPageChars = 24000;
  static constexpr size_t kBudgetBytes = 64u << 20;

  // Returns `text` unchanged when it fits a page; otherwise stores it and returns its first
  // page followed by the footer
  // "[output N: L lines, offsets 0-K shown; the output tool reads on from offset K+1, or with a
  // filter finds lines in it]".
  std::string page(std::string text);

  // Lines of result `id` from line `offset` (at most `limit` lines and one page of text), or
  // the lines containing `filter` (case-insensitive); every line is prefixed "<offset>: ".
  absl::StatusOr<std::string> read(uint64_t id, uint64_t offset, uint64_t limit, std::string_view filter);

 private:
  struct entry {
    uint64_t id;
    std::vector<std::string> lines;
    size_t bytes;
  };
  std::mutex mutex_;
  std::deque<entry> entries_;
  size_t bytes_ = 0;
  uint64_t next_id_ = 1;
};

// Splits text into lines, without the newlines; trailing blanks of each line are trimmed.
std::vector<std::string> split_lines(std::string_view text);

}  // namespace toolhost::debugger
