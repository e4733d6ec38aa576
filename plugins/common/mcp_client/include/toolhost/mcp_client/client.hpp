// An MCP client for one upstream server: starts it (lazily, and again after it died), opens the
// conversation in 2026-07-28 when the upstream offers it and in 2025-11-25 otherwise
// (negotiation.hpp), lists what it offers across pages, and sends requests with progress,
// cancellation, timeouts and (2026-07-28) input-required rounds; over HTTP in 2026-07-28 its
// tools/call headers mirror the arguments that the listed tools mark (tool_headers.hpp).
// Upstream notifications and requests reach the owner through callbacks, in either era: a
// 2026-07-28 upstream's list changes come on a subscriptions/listen stream the client keeps open.
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
#include <toolhost/mcp_client/input_rounds.hpp>
#include <toolhost/mcp_client/negotiation.hpp>
#include <toolhost/mcp_client/transport.hpp>

namespace toolhost::mcp_client {

struct client_options {
  upstream_spec upstream;
  std::string client_name = "toolhost";
  std::string client_version = "0.1.0";
  // What we tell the upstream we can do (initialize's capabilities, or 2026-07-28's _meta).
  std::string capabilities_json = "{}";
  // 2026-07-28: the log level every request asks for (its _meta logLevel), so that the upstream
  // sends log messages as a 2025 server does before logging/setLevel; empty asks for none.
  std::string log_level;
  // Starting and initializing the upstream (npx may have to download it first).
  std::chrono::milliseconds start_timeout{120000};
  // How long server/discover may go unanswered before the upstream counts as initialize-era
  // (at most half of start_timeout). An upstream that takes longer to begin reading gets 2025-11-25.
  std::chrono::milliseconds discover_timeout{10000};
  // Requests other than the ones given their own timeout (lists, reads).
  std::chrono::milliseconds request_timeout{60000};
};

struct client_callbacks {
  // Upstream notifications other than progress, on the reader thread: must not block and
  // must not send requests. `params` is JSON.
  std::function<void(const std::string& method, const std::string& params)> notification;
  // Upstream requests other than ping (elicitation/create, sampling/createMessage,
  // roots/list) of a 2025-era upstream, on a thread of their own. Returns the result JSON or an
  // error. (A 2026-07-28 upstream asks through the request instead: request_options.input.)
  std::function<absl::StatusOr<std::string>(const std::string& method, const std::string& params)> request;
  // The upstream went away on its own (not through stop()). Must not block.
  std::function<void(const std::string& reason)> closed;
  // Something the owner should log as a warning: a tool left out of tools/list (tool_headers.hpp).
  // On the thread that asked for the list.
  std::function<void(const std::string& message)> warning;
};

// Progress from the upstream for one request; `total` < 0 when it did not say.
using progress_fn = std::function<void(double progress, double total, const std::string& message)>;

struct request_options {
  std::chrono::milliseconds timeout{0};  // 0: client_options.request_timeout
  std::string meta_json;                 // the `_meta` to send (a progressToken in it is replaced)
  progress_fn progress;                  // set: ask the upstream for progress and route it here
  std::shared_ptr<cancel_flag> cancel;   // raised: tell the upstream and return Cancelled
  // 2026-07-28: answers the questions of an input-required result, after which the request is
  // sent again with the answers. Unset: such a result is an error naming the questions.
  input_fn input;
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
  // What the running (or last) upstream said about itself, and which revision it speaks.
  std::optional<server_info> info() const;
  // The process id of the running upstream, 0 when none.
  int pid() const;

  // Every item of a paginated list (tools/list "tools", resources/list "resources", ...), each
  // as compact JSON, walking nextCursor to the end. Starts the upstream if needed. tools/list of
  // a 2026-07-28 upstream over HTTP also updates the x-mcp-header annotations that tools/call
  // mirrors, and leaves out the tools whose annotations are invalid.
  absl::StatusOr<std::vector<std::string>> list_all(std::string_view method, std::string_view key);

  // One request; `params_json` is an object. Starts the upstream if needed. Returns the
  // result JSON or an error status (see connection::request). With a 2026-07-28 upstream the
  // request carries the era's _meta, input-required rounds are answered through options.input,
  // and the result comes back as 2025-11-25 has it (legacy_result), so callers see one shape.
  absl::StatusOr<std::string> request(std::string_view method, std::string_view params_json,
                                      const request_options& options = {});

  // Stops the upstream. A later request starts it again.
  void stop();

 private:
  absl::StatusOr<std::shared_ptr<connection>> current();
  client_identity identity() const;
  void on_notification(const std::shared_ptr<connection>& from, const message& m);
  // Opens subscriptions/listen for the list changes a 2026-07-28 upstream says it announces.
  void listen_for_changes(connection& conn, const server_info& info);
  // tools/list's items, read for their x-mcp-header annotations when they matter (see list_all).
  std::vector<std::string> remember_annotations(std::vector<std::string> tools);

  client_options options_;
  client_callbacks callbacks_;
  mutable std::mutex mutex_;  // guards conn_ and info_
  std::mutex start_mutex_;    // one start at a time
  std::shared_ptr<connection> conn_;
  std::shared_ptr<connection> starting_;  // being initialized
  std::optional<server_info> info_;
  std::map<const connection*, std::shared_ptr<std::atomic<bool>>> deliberate_;
  // From the last tools/list (guarded by mutex_); handed to every new connection, so that a
  // restarted upstream's first call carries its headers before the list is read again.
  std::shared_ptr<const tool_annotations> annotations_;

  std::mutex progress_mutex_;                    // held while a progress callback runs
  std::map<std::string, progress_fn> progress_;  // our progress token -> where it goes
  uint64_t next_token_ = 1;
};

}  // namespace toolhost::mcp_client
