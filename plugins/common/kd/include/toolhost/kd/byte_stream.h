// A connected byte stream for KDCOM: a Unix socket (QEMU's serial chardev socket), TCP, or a
// serial device. Reads wait with a timeout and can be woken by shutdown() from another thread;
// writes are serialized so the break-in byte can be sent while another thread reads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace toolhost::kd {

class byte_stream {
 public:
  // `connect`: "unix:PATH", "tcp:HOST:PORT", or a path (a Unix socket or a serial device,
  // which is set to 115200 8N1 raw). Gives up after `timeout`, which also bounds how long a
  // write waits for a peer that takes no byte (at least 1 s, at most 10 s).
  static absl::StatusOr<std::unique_ptr<byte_stream>> open(std::string_view connect, std::chrono::milliseconds timeout);
  ~byte_stream();
  byte_stream(const byte_stream&) = delete;
  byte_stream& operator=(const byte_stream&) = delete;

  // Reads what is available, waiting up to `timeout` for the first byte. Returns 0 bytes on
  // timeout; Unavailable when the peer closed or shutdown() was called.
  absl::StatusOr<size_t> read_some(std::span<uint8_t> into, std::chrono::milliseconds timeout);
  // DeadlineExceeded when the peer took no byte for the write stall of open().
  absl::Status write_all(std::span<const uint8_t> bytes);  // [any-thread]
  void shutdown();                                         // [any-thread]
  const std::string& name() const { return name_; }

 private:
  byte_stream(int fd, std::string name);
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  std::string name_;
  std::mutex write_mutex_;
  bool serial_ = false;
  std::chrono::milliseconds write_stall_{10000};
};

}  // namespace toolhost::kd
