// An upstream MCP server as a child process speaking newline-delimited JSON-RPC on its
// stdin/stdout. Its stderr is copied to ours, and the last lines are kept so that an error
// can say why the server died.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include <sys/types.h>

#include <toolhost/mcp_client/transport.hpp>

namespace toolhost::mcp_client {

class stdio_transport final : public transport {
 public:
  explicit stdio_transport(upstream_spec spec) : spec_(std::move(spec)) {}
  ~stdio_transport() override { close(); }

  absl::Status start(transport_events events) override;
  absl::Status send(std::string_view json) override;
  void close() override;
  int pid() const override { return static_cast<int>(pid_); }

 private:
  void read_stdout();
  void read_stderr();
  // Waits up to `ms` for the child to exit; returns true and fills exit_text_ if it did.
  bool reap(int ms);
  std::string stderr_tail();

  upstream_spec spec_;
  transport_events events_;
  pid_t pid_ = 0;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::thread stdout_thread_;
  std::thread stderr_thread_;
  std::mutex write_mutex_;
  std::mutex state_mutex_;
  bool reaped_ = false;
  std::string exit_text_;
  std::string tail_;  // the last bytes the child wrote to stderr
  std::atomic<bool> closing_{false};
  std::atomic<bool> stderr_done_{false};
  std::once_flag closed_once_;
};

}  // namespace toolhost::mcp_client
