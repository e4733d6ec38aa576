// Tasks: a long tools/call answered at once with a handle the client polls, for MCP 2026-07-28's
// `io.modelcontextprotocol/tasks` extension and 2025-11-25's experimental tasks (one machinery,
// two wire shapes). The store holds each task's state, the questions its call asks the person
// while it runs, and its result after it ends: bounded in count and in bytes, each kept for its
// time to live. A task belongs to the client that made it: `find` answers only its owner.
// See DESIGN.md beside this file for how a call becomes a task.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

namespace toolhost::mcp {

struct call_state;

inline constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";

enum class task_status { working, input_required, completed, failed, cancelled };
const char* task_status_name(task_status s);
inline bool is_terminal(task_status s) {
  return s == task_status::completed || s == task_status::failed || s == task_status::cancelled;
}

// Which wire shows the task: 2026-07-28 (ttlMs, pollIntervalMs, result inlined in tasks/get) or
// 2025-11-25 (ttl, pollInterval, tasks/result).
enum class task_era { v2025, v2026 };

struct task_limits {
  size_t max_tasks = 1024;                   // held at once, running or finished
  size_t max_result_bytes = 64u << 20;       // finished tasks' results and errors together
  size_t max_one_result = 16u << 20;         // one task's result
  int64_t default_ttl_ms = 60 * 60 * 1000;   // kept an hour after creation...
  int64_t max_ttl_ms = 24 * 60 * 60 * 1000;  // ...or what the client asks, at most a day
  int64_t min_ttl_ms = 1000;
  int64_t poll_interval_ms = 500;
};

class task {
 public:
  task(std::string id, std::string owner, std::string tool, task_era era, int64_t ttl_ms,
       std::shared_ptr<call_state> call);

  const std::string id;
  const std::string owner;
  const std::string tool;
  const task_era era;
  const int64_t ttl_ms;
  const std::chrono::system_clock::time_point created;
  const std::chrono::steady_clock::time_point expires;

  task_status status() const;
  // The Task object in the era's shape; `detailed` (2026 tasks/get) adds the pending
  // inputRequests, the result or the error.
  std::string json(bool detailed, int64_t poll_interval_ms) const;
  // 2025 tasks/result: the CallToolResult, or (`is_error`) the JSON-RPC error object.
  std::string payload(bool& is_error) const;

  // The running call reports progress: it becomes the status message.
  void set_message(std::string message);
  // A question of the running call (2026): shown in inputRequests under a fresh key until
  // tasks/update answers it. Waits for the answer; nullopt when `give_up` says so first.
  std::optional<std::string> ask(std::string request_json, const std::function<bool()>& give_up);
  // 2025: the call waits for the client's answer to a server request (status input_required).
  void waiting_for_input(bool waiting);
  // tasks/update: answers to the questions asked now; other keys are ignored.
  void answer(const rapidjson::Value& responses);
  // Waits until the task is terminal or `stop` says so (2025 tasks/result).
  bool wait_terminal(const std::function<bool()>& stop) const;

  // notifications/tasks (2026, asked for on subscriptions/listen) and notifications/tasks/status
  // (2025, sent to the session that made the task): `w` gets the task as tasks/get shows it
  // (`poll_interval_ms` as there) each time its status changes, the terminal one last.
  // An id for unwatch; 0 when the task is terminal already or has kMaxWatchers.
  using watcher = std::function<void(const std::string& detailed_json)>;
  static constexpr size_t kMaxWatchers = 16;
  uint64_t watch(int64_t poll_interval_ms, watcher w);
  void unwatch(uint64_t id);

 private:
  friend class task_store;
  void touch();  // lastUpdatedAt = now; caller holds mutex_
  // Tells the watchers when the status differs from the one they were last told; called after
  // each change, without mutex_ (a watcher sends, and may read the task).
  void publish();

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  task_status status_ = task_status::working;
  std::string message_;
  std::chrono::system_clock::time_point updated_;
  std::vector<std::pair<std::string, std::string>> questions_;  // (key, {"method","params"})
  std::map<std::string, std::string, std::less<>> answers_;     // answered, not yet taken by the call
  int next_key_ = 0;
  int waiting_ = 0;                   // 2025 server requests in flight
  std::string payload_;               // result (completed) or error (failed)
  std::shared_ptr<call_state> call_;  // while the call runs: what tasks/cancel stops
  std::vector<std::pair<uint64_t, watcher>> watchers_;
  uint64_t next_watch_ = 0;
  int64_t watch_poll_ms_ = 0;
  task_status published_ = task_status::working;  // the status the watchers know
};

class task_store {
 public:
  explicit task_store(task_limits limits = {}) : limits_(limits) {}
  ~task_store();

  // A new task for `call`, or nullptr when the store is full of running tasks. `ttl_ms` 0: the
  // default; others are kept within the limits.
  std::shared_ptr<task> create(std::string owner, std::string tool, task_era era, int64_t ttl_ms,
                               std::shared_ptr<call_state> call);
  // The task `id` of `owner`; nullptr when unknown, expired or another client's.
  std::shared_ptr<task> find(std::string_view id, std::string_view owner);
  // `owner`'s tasks, oldest first (2025 tasks/list).
  std::vector<std::shared_ptr<task>> list(std::string_view owner);
  // The call ended: completed (a CallToolResult, tool errors included) or failed (a JSON-RPC
  // error object). Ignored for a task that is terminal already (cancelled). Keeps the results
  // within the byte limit by forgetting the oldest finished tasks.
  // `call_ended` false: the status is settled while the call still unwinds (its time limit).
  void settle(const std::shared_ptr<task>& t, task_status status, std::string payload, bool call_ended = true);
  // tasks/cancel: the task is cancelled at once and its call asked to stop.
  void cancel(const std::shared_ptr<task>& t);
  // A client that owned tasks is gone (a 2025 session ended): its tasks are cancelled and forgotten.
  void drop_owner(std::string_view owner);
  // Shutdown: cancels every running task and waits (up to `grace_ms`) for their calls to return.
  void cancel_all(int grace_ms);

  const task_limits& limits() const { return limits_; }
  size_t size() const;
  size_t result_bytes() const;

 private:
  // settle without telling the watchers (settle does, after the lock).
  void record_settlement(const std::shared_ptr<task>& t, task_status status, std::string payload, bool call_ended);
  void purge_locked(std::chrono::steady_clock::time_point now);
  void forget_locked(std::map<std::string, std::shared_ptr<task>, std::less<>>::iterator it);

  const task_limits limits_;
  mutable std::mutex mutex_;
  std::condition_variable runs_done_;
  std::map<std::string, std::shared_ptr<task>, std::less<>> tasks_;
  std::map<const task*, size_t> bytes_of_;  // finished tasks' payload sizes
  size_t bytes_ = 0;
  size_t running_ = 0;  // calls that have not settled
};

}  // namespace toolhost::mcp
