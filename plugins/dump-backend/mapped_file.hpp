// A file mapped read-only (copy-on-write private) for random access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <absl/status/statusor.h>

namespace toolhost::dump_backend {

class mapped_file {
 public:
  static absl::StatusOr<std::unique_ptr<mapped_file>> open(const std::string& path);
  // A private anonymous mapping holding a copy of `bytes` (fuzzing, tests); `name` stands in
  // for the path in messages.
  static absl::StatusOr<std::unique_ptr<mapped_file>> copy_of(std::span<const uint8_t> bytes, const std::string& name);
  ~mapped_file();
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // libelf wants a writable pointer; the mapping is private, so writes never reach the file.
  char* writable() const { return reinterpret_cast<char*>(data_); }
  const std::string& path() const { return path_; }

 private:
  mapped_file() = default;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace toolhost::dump_backend
