// llvm::Error and llvm::Expected to absl::Status, consuming the error (private to this library).
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <llvm/Support/BinaryStreamArray.h>
#include <llvm/Support/Error.h>

namespace toolhost::pdb::detail {

// The error's text, consumed.
inline std::string take_message(llvm::Error error) { return llvm::toString(std::move(error)); }

inline absl::Status invalid(const std::string& file, const std::string& what, llvm::Error error) {
  return absl::InvalidArgumentError(file + ": " + what + ": " + take_message(std::move(error)));
}

// A FixedStreamArray's elements, read through its stream with every read checked: indexing one
// directly dereferences a null pointer when the stream's blocks are not in the file.
template <typename T>
std::optional<std::vector<T>> copy_array(const llvm::FixedStreamArray<T>& array) {
  const llvm::BinaryStreamRef stream = array.getUnderlyingStream();
  const uint32_t bytes = stream.getLength() / sizeof(T) * sizeof(T);
  std::vector<T> out(bytes / sizeof(T));
  if (bytes == 0) return out;
  llvm::ArrayRef<uint8_t> data;
  if (auto e = stream.readBytes(0, bytes, data)) {
    take_message(std::move(e));
    return std::nullopt;
  }
  std::memcpy(static_cast<void*>(out.data()), data.data(), bytes);
  return out;
}

}  // namespace toolhost::pdb::detail
