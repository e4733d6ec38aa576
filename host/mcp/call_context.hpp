// The per-call context a plugin receives (toolhost_call_t): progress, cancellation, client log
// messages, requests to the client, and the "ask before sending a whole file" filter.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <toolhost/plugin.h>

#include "host/mcp/session.hpp"
#include "host/mcp/tasks.hpp"

namespace toolhost::mcp {

// A tools/call of a tool that may run as a task (tasks.hpp): whether it still may, and the task
// it became. The session's worker, the timer that ends its first moments and the call's questions
// decide under `mutex` (session_tasks.cpp).
struct task_offer {
  enum class phase { open, closed, task };
  std::mutex mutex;
  phase at = phase::open;
  task_era era = task_era::v2026;
  int64_t ttl_ms = 0;  // 0: the store's default
  std::string owner;
  std::shared_ptr<mcp::task> made;
  uint64_t window = 0;  // the timer's entry in the server's deadlines, 0 for none
};

// One tool call (or read, render, completion) in flight.
struct call_state {
  std::string id;              // JSON text of the client's request id
  std::string name;            // tool, prompt or resource it runs
  std::string progress_token;  // JSON text, empty when the client asked for no progress
  std::string meta_json = "{}";
  request_ptr request;             // its id and where everything related to it goes
  std::string missing_capability;  // 2026-07-28: the client capability it needed and was not declared
  std::atomic<bool> cancelled{false};
  // The client has its answer (the result, or the time limit's error): nothing more is sent.
  std::atomic<bool> answered{false};
  uint64_t deadline = 0;  // the call's entry in the server's deadlines, 0 for none
  // 2026-07-28 input-required rounds (input_required.hpp): the answers the client has given (this
  // round's and, through requestState, earlier ones), the questions of this run that have none
  // yet, as (key, {"method","params"}), and how many questions without a key of their own were
  // asked (their keys are "input-1", "input-2"... in the order asked, the same in every run).
  bool input_rounds = false;  // the request may end with an InputRequiredResult
  std::map<std::string, std::string, std::less<>> answers;
  std::vector<std::pair<std::string, std::string>> input_requests;
  int unkeyed_questions = 0;
  std::mutex input_mutex;  // guards the three above: a plugin may ask from several threads
  // Tasks: the client asked for one (2025-11-25's params.task, with its ttl), and the offer made.
  bool task_requested = false;
  int64_t task_ttl_ms = 0;
  std::shared_ptr<task_offer> offer;
  // A protocol error the call ends with instead of a result (code 0: none).
  int error_code = 0;
  std::string error_message;
  std::string error_data;

  // Marks the call cancelled and runs the plugin's cancel handler once.
  void cancel();
  // Installs (or, with fn == nullptr, removes) the plugin's cancel handler. Removal waits for a
  // handler that is running on another thread, so its user_data may die right after.
  void set_cancel_handler(toolhost_cancel_fn fn, void* user_data);
  // Drops progress reports that do not grow; true when this one may be sent.
  bool admit_progress(double progress);

 private:
  std::mutex mutex_;
  std::mutex handler_running_;
  toolhost_cancel_fn cancel_fn_ = nullptr;
  void* cancel_user_data_ = nullptr;
  bool any_progress_ = false;
  double last_progress_ = 0;
};

class call_context {
 public:
  call_context(std::shared_ptr<session> s, std::shared_ptr<call_state> call);
  call_context(const call_context&) = delete;
  call_context& operator=(const call_context&) = delete;

  const toolhost_call_t* raw() const { return &raw_; }
  session& owner() const { return *session_; }
  call_state& call() const { return *call_; }

 private:
  toolhost_call_t raw_{};
  std::shared_ptr<session> session_;
  std::shared_ptr<call_state> call_;
  std::string client_capabilities_;
  std::string server_name_;
  std::string protocol_version_;
};

}  // namespace toolhost::mcp
