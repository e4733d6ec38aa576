// The DWARF fuzzers' input: little-endian words and length-prefixed byte runs read off the
// fuzzer's bytes; a short input reads as zeros and empty runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace toolhost::testing {

class fuzz_input {
 public:
  fuzz_input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4 && at_ < size_; ++i) v |= static_cast<uint32_t>(data_[at_++]) << (8 * i);
    return v;
  }
  uint8_t u8() { return at_ < size_ ? data_[at_++] : 0; }
  std::string bytes(size_t n) {
    if (n > size_ - at_) n = size_ - at_;
    std::string out(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return out;
  }
  std::string rest() { return bytes(size_ - at_); }
  bool done() const { return at_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace toolhost::testing
