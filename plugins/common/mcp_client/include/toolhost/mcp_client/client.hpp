// An MCP client for one upstream server: starts it (lazily, and again after it died),
// initializes it, lists what it offers across pages, and sends requests with progress,
// cancellation and timeouts. Upstream notifications and requests reach the owner through
// callbacks.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/mcp_client/cancel_flag.hpp>
#include <toolhost/mcp_client/connection.hpp>
#include <toolhost/mcp_client/transport.hpp>

namespace toolhost::mcp_client {

inline constexpr std::string_view kProtocolVersion = "2025-11-25";

struct client_options {
  upstream_spec upstream;
  std::string client_name = "toolhost";
  std::string client_version = "0.1.0";
  // What we tell the upstream we can do (the initialize request's capabilities).
  std::string capabilities_json = "{}";
  // Starting and initializing the upstream (npx may have to download it first).
  std::chrono::milliseconds start_timeout{120000};
  // Requests other than the ones given their own timeout (lists, reads).
  std::chrono::milliseconds request_timeout{60000};
};

// What the upstream said about itself in its initialize reply.
struct server_info {
  std::string protocol_version;
  std::string capabilities;  // JSON object
  std::string server;        // the serverInfo object, JSON
  std::string instructions;  // may be empty
};

struct client_callbacks {
  // Upstream notifications other than progress, on the reader thread: must not block and
  // must not send requests. `params` is JSON.
  std::function<void(const std::string& method, const std::string& params)> notification;
  // Upstream requests other than ping (elicitation/create, sampling/createMessage,
  // roots/list), on a thread of their own. Returns the result JSON or an error.
  std::function<absl::StatusOr<std::string>(const std::string& method, const std::string& params)> request;
  // The upstream went away on its own (not through stop()). Must not block.
  std::function<void(const std::string& reason)> closed;
};

// Progress from the upstream for one request; `total` < 0 when it did not say.
using progress_fn = std::function<void(double progress, double total, const std::string& message)>;

struct request_options {
  std::chrono::milliseconds timeout{0};  // 0: client_options.request_timeout
  std::string meta_json;                 // the `_meta` to send (a progressToken in it is replaced)
  progress_fn progress;                  // set: ask the upstream for progress and route it here
  std::shared_ptr<cancel_flag> cancel;   // raised: tell the upstream and return Cancelled
};

class client {
 public:
  client(client_options options, client_callbacks callbacks);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  // Starts and initializes the upstream unless it is running. Concurrent callers wait for
  // the same start. [any-thread]
  absl::Status start();
  bool running() const;
  // The initialize reply of the running (or last) upstream.
  std::optional<server_info> info() const;
  // The process id of the running upstream, 0 when none.
  int pid() const;

  // Every item of a paginated list (tools/list "tools", resources/list "resources", ...), each
  // as compact JSON, walking nextCursor to the end. Starts the upstream if needed.
  absl::StatusOr<std::vector<std::string>> list_all(std::string_view method, std::string_view key);

  // One request; `params_json` is an object. Starts the upstream if needed. Returns the
  // result JSON or an error status (see connection::request).
  absl::StatusOr<std::string> request(std::string_view method, std::string_view params_json,
                                      const request_options& options = {});

  // Stops the upstream. A later request starts it again.
  void stop();

 private:
  absl::StatusOr<std::shared_ptr<connection>> current();
  void on_notification(const std::shared_ptr<connection>& from, const message& m);

  client_options options_;
  client_callbacks callbacks_;
  mutable std::mutex mutex_;  // guards conn_ and info_
  std::mutex start_mutex_;    // one start at a time
  std::shared_ptr<connection> conn_;
  std::shared_ptr<connection> starting_;  // being initialized
  std::optional<server_info> info_;
  std::map<const connection*, std::shared_ptr<std::atomic<bool>>> deliberate_;

  std::mutex progress_mutex_;                    // held while a progress callback runs
  std::map<std::string, progress_fn> progress_;  // our progress token -> where it goes
  uint64_t next_token_ = 1;
};

}  // namespace toolhost::mcp_client
