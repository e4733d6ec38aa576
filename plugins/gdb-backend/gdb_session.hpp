// A debug-target session over the GDB remote protocol (gdbserver, QEMU's gdbstub).
//
// All-stop: the stub answers requests only while the target is stopped, so every request
// made while it runs is refused here with a sentence, except the interrupt.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/debug_target.h>

#include "connection.hpp"
#include "stop_reply.hpp"
#include "target_description.hpp"

namespace toolhost::gdb {

struct module_entry {
  std::string name, path;
  uint64_t base = 0, size = 0;
};

struct thread_entry {
  int64_t id = 0;
  std::string name;
};

class session {
 public:
  // Connects, negotiates features, reads the register map and the initial stop.
  static absl::StatusOr<std::unique_ptr<session>> open(std::string_view address, std::chrono::milliseconds timeout);
  ~session();

  uint64_t capabilities() const;
  // The describe() JSON of debug_target.h.
  std::string describe_json() const;
  const target_description& registers() const { return description_; }

  absl::StatusOr<size_t> read_memory(toolhost_dt_space_t space, uint64_t address, void* buffer, size_t size);
  absl::Status write_memory(toolhost_dt_space_t space, uint64_t address, const void* data, size_t size);
  absl::StatusOr<std::vector<uint8_t>> read_registers(int64_t thread);
  absl::Status write_register(int64_t thread, uint32_t index, const void* value, size_t size);
  absl::Status set_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length);
  absl::Status clear_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length);
  // Resumes; `signal` (Linux's number, 0: none) goes to the thread that reported the last stop.
  absl::Status resume(toolhost_dt_resume_t how, int64_t thread, int signal = 0);
  // QPassSignals: the signals gdbserver hands to the program without stopping (Linux numbers).
  absl::Status pass_signals(const std::vector<int>& signals);
  // qXfer:siginfo:read of the last signal stop.
  absl::StatusOr<std::string> siginfo();
  absl::Status interrupt();
  // OK with `stop` filled, DeadlineExceeded while still running.
  absl::Status wait_stop(std::chrono::milliseconds timeout, toolhost_dt_stop_t& stop);
  bool is_running() const { return running_; }
  absl::StatusOr<std::vector<thread_entry>> threads();
  absl::Status select_thread(int64_t thread);
  int64_t current_thread() const { return current_thread_; }
  absl::StatusOr<std::vector<module_entry>> modules();
  std::string take_output();
  // Removes our breakpoints and lets the target run; then closes the connection.
  void shutdown();

 private:
  session() = default;
  absl::Status handshake(std::chrono::milliseconds timeout);
  absl::Status refuse_if_running(std::string_view what) const;
  absl::StatusOr<std::string> request(std::string_view payload);
  absl::StatusOr<std::string> read_xfer(std::string_view object, std::string_view annex);
  absl::Status set_general_thread(int64_t thread);
  absl::StatusOr<uint64_t> current_pc();
  // Steps `thread` off a breakpoint at its pc; true when it did (the stop is then pending).
  absl::StatusOr<bool> step_over_breakpoint(int64_t thread, int signal);
  // "C1e", "S0b", "c", "s" with a thread: what resumes `thread` with a wire signal.
  std::string resume_packet(bool step, int64_t thread, int gdb_signal);
  // The wire's signal number for a Linux one, or an error naming it.
  absl::StatusOr<int> wire_signal(int signal) const;
  absl::StatusOr<size_t> read_chunks(uint64_t address, uint8_t* out, size_t size);
  void record_stop(const stop_reply& reply);
  std::optional<module_entry> describe_elf(const std::string& path, uint64_t bias) const;

  connection conn_;
  std::string features_;
  size_t packet_size_ = 4096;
  bool has_vcont_step_ = false;
  bool has_vcont_ = false;
  bool has_xfer_features_ = false;
  bool has_svr4_ = false;
  bool has_exec_file_ = false;
  bool has_auxv_ = false;
  bool has_physical_ = false;
  bool has_pass_signals_ = false;
  bool has_siginfo_ = false;
  bool system_ = false;  // a whole machine (QEMU) rather than a process
  target_description description_;
  uint32_t g_bytes_ = 0;
  int pc_regnum_ = -1;
  std::atomic<bool> running_{false};
  bool last_was_step_ = false;
  bool interrupted_ = false;
  std::optional<toolhost_dt_stop_t> pending_stop_;
  int64_t current_thread_ = -1;
  int64_t stopped_thread_ = -1;  // the thread that reported the last stop (signals go to it)
  bool last_stop_was_signal_ = false;
  int64_t general_thread_ = -2;  // what Hg last selected
  std::set<std::tuple<int, uint64_t, uint32_t>> breakpoints_;
  std::mutex output_mutex_;
  std::string output_;
  std::string executable_;
  int64_t pid_ = -1;
  std::string attached_;  // qAttached's answer: "1" attached, "0" started by the stub, "" unknown
};

}  // namespace toolhost::gdb
