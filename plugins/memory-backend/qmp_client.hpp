// A minimal QMP (QEMU Machine Protocol) client over a Unix socket: the greeting, capability
// negotiation, and synchronous commands. Asynchronous events are skipped.
#pragma once

#include <string>

#include <absl/status/statusor.h>

namespace toolhost::memory_backend {

class qmp_client {
 public:
  static absl::StatusOr<qmp_client> connect(const std::string& socket_path, int timeout_ms);
  qmp_client(qmp_client&& other) noexcept;
  qmp_client& operator=(qmp_client&&) = delete;
  ~qmp_client();

  // Runs `command` with `arguments_json` (an object, or empty) and returns the JSON text of the
  // "return" member, or the error QEMU answered.
  absl::StatusOr<std::string> execute(const std::string& command, const std::string& arguments_json = "");
  // Runs a human monitor command ("info mtree -f") and returns its text.
  absl::StatusOr<std::string> human(const std::string& command_line);

 private:
  explicit qmp_client(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {}
  absl::StatusOr<std::string> read_line();
  int fd_ = -1;
  int timeout_ms_ = 5000;
  std::string buffer_;
};

}  // namespace toolhost::memory_backend
