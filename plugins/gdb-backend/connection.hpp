// One TCP connection to a GDB remote stub: packets out, packets in, acks while they are on.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/rsp/packet.hpp>

namespace toolhost::gdb {

class connection {
 public:
  connection() = default;
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // "host:port" (host may be a name; default host 127.0.0.1 when only ":port" or "port"), or
  // the path of a Unix socket (anything with a '/', as QEMU's -gdb unix:PATH offers).
  absl::Status open(std::string_view address, std::chrono::milliseconds timeout);
  void close();

  // Sends one packet and, while acks are on, waits for the '+' (resending on '-').
  absl::Status send(std::string_view payload);
  // Sends several packets back to back without waiting (the caller reads the replies in order).
  absl::Status send_many(const std::string& framed);
  // The next packet from the stub, or DeadlineExceeded after `timeout`.
  absl::StatusOr<std::string> receive(std::chrono::milliseconds timeout);
  // send() then receive().
  absl::StatusOr<std::string> request(std::string_view payload,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Writes the 0x03 break-in byte. [any-thread]
  absl::Status interrupt();

  void set_no_ack(bool on) { no_ack_ = on; }
  bool no_ack() const { return no_ack_; }
  // Packets sent and bytes moved, for tracing and benchmarks.
  uint64_t bytes_in() const { return bytes_in_; }

 private:
  absl::Status open_unix(std::string_view path, std::chrono::milliseconds timeout);
  absl::Status write_all(std::string_view bytes);
  // Reads once from the socket (up to `timeout`) into the decoder; false on timeout.
  absl::StatusOr<bool> pump(std::chrono::milliseconds timeout);

  // Moves decoded events into pending_ / the ack counters, acking packets while acks are on.
  void drain_decoder();

  int fd_ = -1;
  std::deque<std::string> pending_;
  int acks_ = 0;
  int nacks_ = 0;
  bool no_ack_ = false;
  std::mutex write_mutex_;
  rsp::decoder decoder_;
  uint64_t bytes_in_ = 0;
};

}  // namespace toolhost::gdb
