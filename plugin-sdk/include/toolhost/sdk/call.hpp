// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: the per-call context (progress, cancellation, logging, asking the user).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/plugin.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/status.hpp>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::sdk {

enum class log_level : int32_t {
  debug = TOOLHOST_LOG_DEBUG,
  info = TOOLHOST_LOG_INFO,
  notice = TOOLHOST_LOG_NOTICE,
  warning = TOOLHOST_LOG_WARNING,
  error = TOOLHOST_LOG_ERROR,
  critical = TOOLHOST_LOG_CRITICAL,
  alert = TOOLHOST_LOG_ALERT,
  emergency = TOOLHOST_LOG_EMERGENCY,
};

// What the person answered to an elicitation.
struct elicit_answer {
  std::string action;   // "accept", "decline" or "cancel"
  std::string content;  // the JSON object they filled in ("{}" unless accepted)
};

// Why toolhost_call_t::client_request failed, in words (`answer` is what it wrote: for
// TOOLHOST_ERR_REMOTE, the client's JSON-RPC error); the code maps by sdk/status.hpp.
inline std::string client_request_failure(toolhost_status_t code, std::string_view method, std::string_view answer) {
  const std::string m(method);
  switch (code) {
    case TOOLHOST_ERR_UNSUPPORTED: return "the client did not declare support for " + m;
    case TOOLHOST_ERR_CANCELLED: return "the call was cancelled before the client answered " + m;
    case TOOLHOST_ERR_TIMEOUT: return "the client did not answer " + m + " in time";
    case TOOLHOST_ERR_REMOTE: return "the client answered " + m + " with an error: " + std::string(answer);
    default: return "could not send " + m + " to the client";
  }
}

// Wraps the host's toolhost_call_t for the length of one call. Not copyable; lives on the
// stack of the tool handler's trampoline.
class call {
 public:
  explicit call(const toolhost_call_t* raw) noexcept : raw_(raw) {}
  call(const call&) = delete;
  call& operator=(const call&) = delete;
  ~call() {
    if (cancel_handler_ && raw_->on_cancel != nullptr) raw_->on_cancel(raw_, nullptr, nullptr);
  }

  const toolhost_call_t* raw() const noexcept { return raw_; }
  std::string_view meta_json() const noexcept { return raw_->meta_json; }
  std::string_view server_name() const noexcept { return raw_->server_name; }
  std::string_view protocol_version() const noexcept { return raw_->protocol_version; }

  // Reports progress when the client asked for it; `total` < 0 means unknown.
  void progress(double done, double total = -1, std::string_view message = {}) const {
    std::string text(message);
    raw_->progress(raw_, done, total, message.empty() ? nullptr : text.c_str());
  }

  bool cancelled() const noexcept { return raw_->is_cancelled(raw_); }

  // Runs `fn` (once, from another thread) when the client cancels this call.
  void on_cancel(std::function<void()> fn) {
    cancel_handler_ = std::make_unique<std::function<void()>>(std::move(fn));
    raw_->on_cancel(
        raw_, [](void* ud) { (*static_cast<std::function<void()>*>(ud))(); }, cancel_handler_.get());
  }

  // A notifications/message to the client; `data_json` is any JSON value.
  void log_json(log_level level, std::string_view data_json, const char* logger = nullptr) const {
    std::string data(data_json);
    raw_->log(raw_, static_cast<toolhost_log_level_t>(level), logger, data.c_str());
  }
  void log(log_level level, std::string_view message, const char* logger = nullptr) const {
    log_json(level, quote(message), logger);
  }

  // A request to the client; the JSON result on success.
  absl::StatusOr<std::string> request(std::string_view method, std::string_view params_json,
                                      uint32_t timeout_ms = 0) const {
    string_writer out;
    std::string m(method), p(params_json);
    const toolhost_status_t s = raw_->client_request(raw_, m.c_str(), p.c_str(), timeout_ms, out.raw());
    if (s == TOOLHOST_OK) return out.take();
    return status_from(s, client_request_failure(s, m, out.text()));
  }

  // Asks the person through a form (elicitation/create); `schema_json` is the requestedSchema.
  absl::StatusOr<elicit_answer> elicit(std::string_view message, std::string_view schema_json) const {
    std::string params = std::string(R"({"mode":"form","message":)") + quote(message) + R"(,"requestedSchema":)" +
                         std::string(schema_json) + "}";
    auto answer = request("elicitation/create", params);
    if (!answer.ok()) return answer.status();
    auto doc = parse_json(*answer);
    if (!doc) return absl::InternalError("the client's elicitation answer is not JSON");
    elicit_answer out;
    out.action = std::string(string_member(*doc, "action").value_or("cancel"));
    const rapidjson::Value* content = member(*doc, "content");
    out.content = content != nullptr ? to_json(*content) : "{}";
    return out;
  }

  // The "ask before sending a whole file" privacy filter; false means do not send it.
  bool confirm_whole_file(std::string_view what) const {
    std::string w(what);
    return raw_->confirm_whole_file(raw_, w.c_str());
  }

 private:
  const toolhost_call_t* raw_;
  std::unique_ptr<std::function<void()>> cancel_handler_;
};

}  // namespace toolhost::sdk
