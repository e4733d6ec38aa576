// An upstream MCP server as a child process speaking newline-delimited JSON-RPC on its
// stdin/stdout. Its stderr is copied to ours, and the last lines are kept so that an error
// can say why the server died.
//
// Reading stdout is a role, not a thread: a reader thread holds it while nobody waits for an
// answer, and a requester waiting for its answer takes it over (read_until), so the thread that
// needs the answer is the one the child's write wakes. One reader at a time (read_mutex_).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include <toolhost/mcp_client/json_rpc.hpp>
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
  bool supports_read_until() const override { return kick_fd_ >= 0 && !closing_ && !output_ended_; }
  bool read_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) override;

 private:
  void read_stdout();
  // Reads what is there (poll said so) and delivers each whole line; false at the end of the
  // output or when the framing broke. Needs read_mutex_.
  bool read_available();
  // Gets the reader thread out of poll() so that a requester can take the reading role.
  void kick_reader();
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
  int kick_fd_ = -1;  // eventfd the reader thread polls besides stdout
  std::thread stdout_thread_;
  std::thread stderr_thread_;
  // close() may run on several threads at once (stop() on one, a failed start on another, the
  // reader at the end of the output): the first takes the two threads and ends them, the others
  // wait until it has (the transport's own threads never wait, it may be joining them).
  std::mutex threads_mutex_;
  std::condition_variable threads_ended_;
  bool threads_taken_ = false;
  bool threads_gone_ = false;
  std::mutex write_mutex_;
  std::mutex read_mutex_;  // held by whoever reads stdout; guards the two below
  line_splitter splitter_;
  std::vector<char> read_buffer_ = std::vector<char>(size_t{1} << 16);
  std::atomic<bool> requester_reading_{false};
  std::atomic<std::chrono::steady_clock::time_point> last_requester_read_{};
  std::atomic<bool> output_ended_{false};
  std::string broken_;  // why the framing broke (guarded by state_mutex_)
  std::mutex state_mutex_;
  bool reaped_ = false;
  std::string exit_text_;
  std::string tail_;  // the last bytes the child wrote to stderr
  std::atomic<bool> closing_{false};
  std::atomic<bool> stderr_done_{false};
  std::once_flag closed_once_;
};

}  // namespace toolhost::mcp_client
