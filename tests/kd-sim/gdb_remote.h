// A client of the GDB remote serial protocol as QEMU's gdbstub speaks it: packets with
// checksums, acknowledgements until QStartNoAckMode, the ^C interrupt byte, stop replies that
// come while the target runs. Used by qemu_machine; one connection, one thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace kdsim {

class gdb_remote {
 public:
  // spec: a Unix socket path (unix:PATH or PATH) or tcp:HOST:PORT. On failure returns nullopt
  // and sets `error` to a sentence naming the problem.
  static std::optional<gdb_remote> connect(const std::string& spec, std::string& error);
  gdb_remote(gdb_remote&& other) noexcept;
  gdb_remote& operator=(gdb_remote&&) = delete;
  ~gdb_remote();

  // Sends `packet` and waits up to `timeout` for the reply; nullopt when none came or the
  // connection closed.
  std::optional<std::string> request(const std::string& packet,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Sends `packet` without waiting for a reply (c, s: the reply is the next stop).
  bool send(const std::string& packet);
  // The next packet QEMU sends within `timeout` (0: only one already here).
  std::optional<std::string> receive(std::chrono::milliseconds timeout);
  void interrupt();  // ^C: QEMU stops the VM and answers with a stop reply
  bool alive() const { return fd_ >= 0; }

 private:
  explicit gdb_remote(int fd) : fd_(fd) {}
  bool write_all(const std::string& bytes);
  std::optional<std::string> take_packet();

  int fd_ = -1;
  bool acks_ = true;  // until QStartNoAckMode is accepted
  std::string in_;
};

}  // namespace kdsim
