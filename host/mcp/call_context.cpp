#include "host/mcp/call_context.hpp"

#include <absl/strings/str_cat.h>
#include <toolhost/sdk/strings.hpp>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/log.hpp"
#include "host/mcp/session.hpp"
#include "host/policy/approval.hpp"

namespace toolhost::mcp {
namespace {

call_context& self(const toolhost_call_t* raw) { return *static_cast<call_context*>(raw->host_data); }

void progress(const toolhost_call_t* raw, double done, double total, const char* message) {
  call_context& c = self(raw);
  // A call that may become a task reports progress without a token: it is the task's status message.
  const bool wanted = !c.call().progress_token.empty() || c.call().offer != nullptr;
  if (!wanted || c.call().cancelled || !c.call().admit_progress(done)) return;
  c.owner().send_progress(c.call(), done, total, message);
}

bool is_cancelled(const toolhost_call_t* raw) { return self(raw).call().cancelled.load(); }

void on_cancel(const toolhost_call_t* raw, toolhost_cancel_fn fn, void* user_data) {
  self(raw).call().set_cancel_handler(fn, user_data);
}

void log(const toolhost_call_t* raw, toolhost_log_level_t level, const char* logger, const char* data_json) {
  self(raw).owner().send_call_log(self(raw).call(), level, logger != nullptr ? logger : "",
                                  data_json != nullptr ? data_json : "null");
}

toolhost_status_t client_request(const toolhost_call_t* raw, const char* method, const char* params_json,
                                 uint32_t timeout_ms, toolhost_writer_t* out) {
  call_context& c = self(raw);
  std::string answer;
  const int32_t status = c.owner().client_request(c.call(), method != nullptr ? method : "",
                                                  params_json != nullptr ? params_json : "{}", timeout_ms, answer);
  sdk::write(out, answer);
  return status;
}

bool confirm_whole_file(const toolhost_call_t* raw, const char* what) {
  call_context& c = self(raw);
  server& srv = c.owner().srv();
  if (!srv.settings().privacy.ask_before_whole_file) return true;
  const std::string name = what != nullptr ? what : "a file";
  const std::string params =
      policy::approval_request(cat("Send the whole of ", name, " to the agent (", c.call().name, ")?"),
                               policy::approval_schema("Send a whole file"));
  std::string answer;
  const int32_t status = c.owner().client_request(c.call(), "elicitation/create", params, 0, answer);
  if (status == TOOLHOST_ERR_UNSUPPORTED) {
    log::info("privacy",
              cat("refused to send the whole of ", name, " from ", c.call().name, ": the client cannot ask the user"));
    return false;
  }
  const bool approved = policy::read_approval(status == TOOLHOST_OK, answer).approved;
  log::info("privacy",
            cat(approved ? "user allowed" : "user refused", " sending the whole of ", name, " from ", c.call().name));
  return approved;
}

}  // namespace

void call_state::cancel() {
  toolhost_cancel_fn fn = nullptr;
  void* ud = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (cancelled.exchange(true)) return;
    fn = cancel_fn_;
    ud = cancel_user_data_;
  }
  if (fn != nullptr) {
    std::lock_guard running(handler_running_);
    fn(ud);
  }
}

void call_state::set_cancel_handler(toolhost_cancel_fn fn, void* user_data) {
  std::lock_guard running(handler_running_);  // waits for a handler running elsewhere
  bool run_now = false;
  {
    std::lock_guard lock(mutex_);
    cancel_fn_ = fn;
    cancel_user_data_ = user_data;
    run_now = fn != nullptr && cancelled.load();
  }
  if (run_now) fn(user_data);
}

bool call_state::admit_progress(double progress) {
  std::lock_guard lock(mutex_);
  if (any_progress_ && progress <= last_progress_) return false;
  any_progress_ = true;
  last_progress_ = progress;
  return true;
}

call_context::call_context(std::shared_ptr<session> s, std::shared_ptr<call_state> call)
    : session_(std::move(s)), call_(std::move(call)) {
  static const request_context kNone;
  const request_context& request = call_->request ? *call_->request : kNone;
  client_capabilities_ = session_->client_capabilities_json(request);
  server_name_ = session_->srv().name();
  protocol_version_ = session_->protocol_version(request);
  raw_.struct_size = sizeof(raw_);
  raw_.host_data = this;
  raw_.meta_json = call_->meta_json.c_str();
  raw_.client_capabilities_json = client_capabilities_.c_str();
  raw_.server_name = server_name_.c_str();
  raw_.protocol_version = protocol_version_.c_str();
  raw_.progress = progress;
  raw_.is_cancelled = is_cancelled;
  raw_.on_cancel = on_cancel;
  raw_.log = log;
  raw_.client_request = client_request;
  raw_.confirm_whole_file = confirm_whole_file;
}

}  // namespace toolhost::mcp
