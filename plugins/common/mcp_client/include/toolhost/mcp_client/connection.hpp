// A JSON-RPC session over one transport: numbered requests and their answers, notifications
// and requests from the other side, timeouts and cancellation. Knows nothing about MCP
// methods; client.hpp builds MCP on top.
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

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/mcp_client/cancel_flag.hpp>
#include <toolhost/mcp_client/json_rpc.hpp>
#include <toolhost/mcp_client/transport.hpp>

namespace toolhost::mcp_client {

// The payload key under which a status from an upstream JSON-RPC error carries the error
// object as JSON text, so a proxy can pass it on unchanged.
inline constexpr const char* kJsonRpcErrorPayload = "toolhost.mcp_client/jsonrpc-error";

// The upstream's JSON-RPC error object when `status` came from one.
std::optional<std::string> jsonrpc_error(const absl::Status& status);

// The code of the upstream's JSON-RPC error behind `status`, 0 when there is none.
int64_t jsonrpc_error_code(const absl::Status& status);

struct connection_handlers {
  // Notifications, on the transport's thread, in arrival order. Must not block and must not
  // call request() (the answer would have to arrive on this very thread).
  std::function<void(const message&)> on_notification;
  // A request from the other side, on a thread of its own (it may wait for a person). Returns
  // the result JSON, or a status whose message becomes the JSON-RPC error; a status carrying
  // kJsonRpcErrorPayload is sent as that error object.
  std::function<absl::StatusOr<std::string>(const message&)> on_request;
  // The wire closed; every request still waiting has failed with `reason` already.
  std::function<void(const std::string& reason)> on_closed;
};

class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(std::unique_ptr<transport> wire, connection_handlers handlers);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  absl::Status open();

  // Sends a request and waits for its answer: the result JSON, or an error status (the
  // upstream's error, Unavailable when the wire closed, DeadlineExceeded after `timeout`,
  // Cancelled when `cancel` was raised). On timeout and cancel the other side is told as the
  // transport does it (transport::cancel): notifications/cancelled, or in 2026-07-28 over HTTP
  // closing the request's stream. [any-thread]
  absl::StatusOr<std::string> request(std::string_view method, std::string_view params_json,
                                      std::chrono::milliseconds timeout,
                                      const std::shared_ptr<cancel_flag>& cancel = nullptr);
  absl::Status notify(std::string_view method, std::string_view params_json);
  // Sends a request whose answer nobody waits for (a 2026-07-28 subscriptions/listen, open as
  // long as the connection is); its notifications arrive as any others do. [any-thread]
  absl::Status send_request(std::string_view method, std::string_view params_json);

  void close();
  bool closed() const;
  std::string closed_reason() const;
  int pid() const { return wire_ != nullptr ? wire_->pid() : 0; }
  // The revision chosen for this connection (negotiation.hpp); empty until then.
  void negotiated(std::string_view protocol_version);
  std::string protocol_version() const;
  // The x-mcp-header annotations of the upstream's tools, for the transport (transport.hpp).
  void mirror_arguments(std::shared_ptr<const tool_annotations> tools) { wire_->mirror_arguments(std::move(tools)); }

 private:
  void on_message(std::string_view text);
  void on_wire_closed(const std::string& reason);
  void answer_request(message m);

  std::unique_ptr<transport> wire_;
  connection_handlers handlers_;
  mutable std::mutex mutex_;
  std::condition_variable answered_;
  int64_t next_id_ = 1;
  std::map<int64_t, std::optional<absl::StatusOr<std::string>>> pending_;
  bool closed_ = false;
  std::string closed_reason_;
  std::string protocol_version_;
  int server_requests_running_ = 0;
  std::condition_variable server_requests_done_;
};

}  // namespace toolhost::mcp_client
