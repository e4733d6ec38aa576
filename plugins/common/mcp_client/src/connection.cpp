#include <toolhost/mcp_client/connection.hpp>

#include <cstdio>
#include <thread>

#include <absl/strings/cord.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp_client {

namespace sdk = toolhost::sdk;

std::optional<std::string> jsonrpc_error(const absl::Status& status) {
  auto payload = status.GetPayload(kJsonRpcErrorPayload);
  if (!payload) return std::nullopt;
  return std::string(*payload);
}

int64_t jsonrpc_error_code(const absl::Status& status) {
  auto error = jsonrpc_error(status);
  auto doc = error ? sdk::parse_json(*error) : std::nullopt;
  const rapidjson::Value* code = doc && doc->IsObject() ? sdk::member(*doc, "code") : nullptr;
  return code != nullptr && code->IsInt64() ? code->GetInt64() : 0;
}

namespace {

// A requester that could not read for itself (another one was) waits this long before it tries
// again, unless its answer comes first.
constexpr auto kRetryReading = std::chrono::milliseconds(10);

absl::Status upstream_error(const message& m) {
  absl::Status s =
      absl::UnknownError("the upstream answered with error " + std::to_string(m.error_code) + ": " + m.error_message);
  s.SetPayload(kJsonRpcErrorPayload, absl::Cord(m.error));
  return s;
}

}  // namespace

connection::connection(std::unique_ptr<transport> wire, connection_handlers handlers)
    : wire_(std::move(wire)), handlers_(std::move(handlers)) {}

connection::~connection() { close(); }

absl::Status connection::open() {
  return wire_->start(transport_events{
      [this](std::string_view text) { on_message(text); },
      [this](const std::string& reason) { on_wire_closed(reason); },
  });
}

absl::StatusOr<std::string> connection::request(std::string_view method, std::string_view params_json,
                                                std::chrono::milliseconds timeout,
                                                const std::shared_ptr<cancel_flag>& cancel) {
  int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return absl::UnavailableError(closed_reason_);
    id = next_id_++;
    pending_[id];
  }
  auto forget = [&] {
    std::lock_guard lock(mutex_);
    pending_.erase(id);
  };
  if (absl::Status s = wire_->send(make_request(id, method, params_json)); !s.ok()) {
    forget();
    return s;
  }
  auto tell_cancelled = [this, id](std::string_view reason) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
    }
    (void)wire_->cancel(std::to_string(id),
                        make_notification("notifications/cancelled", R"({"requestId":)" + std::to_string(id) +
                                                                         R"(,"reason":)" + sdk::quote(reason) + "}"));
  };
  if (cancel != nullptr) {
    cancel->set_hook([this, id, tell_cancelled](const std::string& reason) {
      {
        std::lock_guard lock(mutex_);
        auto it = pending_.find(id);
        if (it == pending_.end() || it->second.has_value()) return;
        it->second = absl::CancelledError(reason.empty() ? "the request was cancelled" : reason);
      }
      answered_.notify_all();
      tell_cancelled(reason);
    });
  }

  std::optional<absl::StatusOr<std::string>> answer;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  {
    std::unique_lock lock(mutex_);
    auto ready = [&] { return pending_[id].has_value(); };
    // Read the answer off the wire on this thread when the transport lets us (it may be another
    // requester's turn: look again shortly). A cancellation, a closed wire or an answer another
    // thread read ends that, and the wait below finishes up.
    for (bool reading = true; reading && !ready() && std::chrono::steady_clock::now() < deadline;) {
      lock.unlock();
      reading = wire_->supports_read_until();
      const bool read = reading && wire_->read_until(
                                       [&] {
                                         std::lock_guard inner(mutex_);
                                         return pending_[id].has_value();
                                       },
                                       deadline);
      lock.lock();
      if (read) break;
      if (reading) answered_.wait_for(lock, kRetryReading, ready);
    }
    if (!answered_.wait_until(lock, deadline, ready)) {
      timed_out = true;
    } else {
      answer = std::move(pending_[id]);
    }
    pending_.erase(id);
  }
  if (cancel != nullptr) cancel->set_hook(nullptr);
  if (timed_out) {
    const std::string why =
        "the upstream did not answer " + std::string(method) + " within " + std::to_string(timeout.count()) + " ms";
    tell_cancelled(why);
    return absl::DeadlineExceededError(why);
  }
  return std::move(*answer);
}

absl::Status connection::notify(std::string_view method, std::string_view params_json) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return absl::UnavailableError(closed_reason_);
  }
  return wire_->send(make_notification(method, params_json));
}

absl::Status connection::send_request(std::string_view method, std::string_view params_json) {
  int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return absl::UnavailableError(closed_reason_);
    id = next_id_++;  // not in pending_: an answer to it is dropped as a late one
  }
  return wire_->send(make_request(id, method, params_json));
}

void connection::on_message(std::string_view text) {
  auto parsed = parse_message(text);
  if (!parsed.ok()) {
    // Not ours to crash on: say so on stderr and go on with the next line.
    std::string line =
        "rea-filter: ignoring a bad message from the upstream: " + std::string(parsed.status().message()) + "\n";
    (void)!::fwrite(line.data(), 1, line.size(), stderr);
    return;
  }
  message& m = *parsed;
  switch (m.type) {
    case message::kind::response:
    case message::kind::error_response: {
      int64_t id = 0;
      if (!integer_id(m, &id)) return;
      {
        std::lock_guard lock(mutex_);
        auto it = pending_.find(id);
        if (it == pending_.end() || it->second.has_value()) return;  // late: cancelled or timed out
        if (m.type == message::kind::response) {
          it->second = std::move(m.result);
        } else {
          it->second = upstream_error(m);
        }
      }
      answered_.notify_all();
      return;
    }
    case message::kind::notification:
      if (handlers_.on_notification) handlers_.on_notification(m);
      return;
    case message::kind::request:
      if (m.method == "ping") {  // answered at once: it must never wait behind anything
        (void)wire_->send(make_result(m.id, "{}"));
        return;
      }
      answer_request(std::move(m));
      return;
  }
}

void connection::answer_request(message m) {
  {
    std::lock_guard lock(mutex_);
    ++server_requests_running_;
  }
  // A thread of its own: answering may mean asking a person, and the reader must go on.
  std::thread([self = shared_from_this(), m = std::move(m)] {
    absl::StatusOr<std::string> result = self->handlers_.on_request
                                             ? self->handlers_.on_request(m)
                                             : absl::UnimplementedError("the client does not handle " + m.method);
    if (result.ok()) {
      (void)self->wire_->send(make_result(m.id, *result));
    } else if (auto error = jsonrpc_error(result.status())) {
      (void)self->wire_->send(std::string(R"({"jsonrpc":"2.0","id":)") + m.id + R"(,"error":)" + *error + "}");
    } else {
      const int64_t code = result.status().code() == absl::StatusCode::kUnimplemented ? -32601 : -32603;
      (void)self->wire_->send(make_error(m.id, code, std::string(result.status().message())));
    }
    std::lock_guard lock(self->mutex_);
    --self->server_requests_running_;
    self->server_requests_done_.notify_all();
  }).detach();
}

void connection::on_wire_closed(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    closed_reason_ = reason;
  }
  // The owner hears first, so that by the time a failed request returns, the end is known.
  if (handlers_.on_closed) handlers_.on_closed(reason);
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, slot] : pending_) {
      if (!slot.has_value()) slot = absl::UnavailableError(reason);
    }
  }
  answered_.notify_all();
}

void connection::close() {
  if (wire_ != nullptr) wire_->close();
  std::unique_lock lock(mutex_);
  if (!closed_) {
    closed_ = true;
    closed_reason_ = "the connection to the upstream was closed";
  }
  // Requests from the upstream still being answered hold a reference to us; give them a
  // moment so their answers are not cut off mid-way.
  server_requests_done_.wait_for(lock, std::chrono::seconds(2), [this] { return server_requests_running_ == 0; });
}

void connection::negotiated(std::string_view protocol_version) {
  {
    std::lock_guard lock(mutex_);
    protocol_version_ = std::string(protocol_version);
  }
  wire_->negotiated(protocol_version);
}

std::string connection::protocol_version() const {
  std::lock_guard lock(mutex_);
  return protocol_version_;
}

bool connection::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

std::string connection::closed_reason() const {
  std::lock_guard lock(mutex_);
  return closed_reason_;
}

}  // namespace toolhost::mcp_client
