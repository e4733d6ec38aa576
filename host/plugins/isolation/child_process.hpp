// The parent's side of one isolated group (DESIGN.md): starts the child toolhost, hands it calls,
// relays what the child asks during a call (progress, log messages, questions to the client)
// through the caller's call context, and when the child dies fails the calls in flight with one
// sentence and starts it again for the next call.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <absl/status/statusor.h>

#include <toolhost/plugin.h>

#include "host/plugins/instance.hpp"
#include "host/plugins/isolation/frame.hpp"

namespace toolhost::plugins::isolation {

// What the child needs to start its plugins: the start frame's JSON (see child_main.cpp).
struct group_spec {
  std::string name;                  // the group: its one plugin's id, or the `group` setting
  std::vector<std::string> plugins;  // ids, in start order
  std::string start_json;
};

class child_process {
 public:
  child_process(group_spec spec, host_events& events);
  ~child_process();  // kills a child that is still running
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // Starts the child and waits for its snapshot of what the plugins registered (JSON). An error
  // when the child could not start or died first.
  absl::StatusOr<std::string> start();

  // Runs `op` ("tool", "read", "prompt", "complete") on `name` in the child and waits for its
  // answer. `context` may be null (a completion). Starts the child first when it is not running.
  // Returns the child's status with its text in `out`; when the child dies or cannot start,
  // TOOLHOST_ERR_INTERNAL with the sentence that says why, naming `plugin` and `name`.
  toolhost_status_t call(std::string_view op, std::string_view plugin, std::string_view name,
                         std::string_view arguments, const toolhost_call_t* context, std::string& out);

  // Asks the child to run its plugins' deinit and waits a little for it to end. [any-thread]
  void stop();

  const group_spec& spec() const { return spec_; }
  pid_t pid() const { return pid_.load(); }
  // Children that ended other than by stop(), since the first start.
  uint32_t crashes() const { return crashes_.load(); }
  // Resident memory of the running child in KiB, 0 when none runs.
  uint64_t resident_kib() const;

 private:
  struct pending;
  // The background reader: reads the socket while no call does (DESIGN.md, "The hot path").
  void read_frames(std::shared_ptr<channel> ch);
  // Reads and handles every frame of `ch` that has arrived, without blocking; false once the
  // child's socket closed (the calls in flight have failed then). Requires read_mutex_.
  bool pump(channel& ch);
  // Handles one frame from the child; false when it is of no kind a child sends (`error` says so).
  bool handle(frame& f, std::string& error);
  // Called once per child, by whoever read the end of its socket: reaps it, fails the calls in
  // flight.
  void child_ended(const std::string& why_bad);
  absl::Status ensure_running(const toolhost_call_t* context);
  absl::StatusOr<std::string> spawn_locked();
  // Makes the child with its end of a new socket pair as its fd 3: 0, or the errno of the step
  // that failed, with `why` the sentence that says so.
  int spawn_child(int* parent_end, pid_t* pid, std::string* why) const;
  void kill_child(std::string why);
  void answer_question(pending& p, const frame& q);
  static void cancel_pending(void* user_data);  // a toolhost_cancel_fn; user_data: the pending call

  group_spec spec_;
  host_events& events_;

  std::mutex start_mutex_;  // one start at a time; held while a child is started
  // The read side of the socket: whoever holds it (a call waiting for its answer, or the
  // background reader) reads the frames that arrived and hands each to its call.
  std::mutex read_mutex_;
  std::condition_variable reader_wake_;  // with mutex_: the background reader waits here
  frame pumped_;                         // guarded by read_mutex_: reused, so reading allocates nothing
  std::shared_ptr<channel> channel_;
  std::atomic<pid_t> pid_{0};
  std::thread reader_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stopping_{false};

  std::mutex mutex_;  // guards what follows
  std::map<uint64_t, std::shared_ptr<pending>> pending_;
  uint64_t next_id_ = 1;
  std::string killed_because_;  // set when the parent ended the child on purpose
  std::string last_end_;        // how the last child ended, for calls that cannot start one
  uint32_t streak_ = 0;         // deaths since the last call that succeeded
  std::chrono::steady_clock::time_point last_death_{};
  uint32_t spinners_ = 0;  // calls reading the socket for their answers themselves
  uint32_t sleepers_ = 0;  // calls asleep until the background reader hands them their answer
  std::chrono::steady_clock::time_point last_spin_{};  // when a call last stopped spinning

  std::atomic<uint32_t> crashes_{0};
};

// "killed by SIGSEGV", "exited with status 0": how a child ended, from waitpid's status.
std::string describe_end(int wait_status);

}  // namespace toolhost::plugins::isolation
