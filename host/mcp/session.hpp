// One client's MCP session with a server: JSON-RPC 2.0 framing rules, the lifecycle and
// version negotiation, dispatch of every method, tool calls on worker threads with progress and
// cancellation, requests to the client (elicitation, sampling) and their answers.
//
// Transports feed it whole messages with handle() and receive everything it sends through the
// sink, tagged with the client request it belongs to, so that Streamable HTTP can route a
// response and its progress to the POST that asked. JSON-RPC ids live in the session: one
// client's ids never meet another's.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "host/mcp/server.hpp"

namespace toolhost::mcp {

// Protocol versions this host speaks, newest first.
inline constexpr const char* kSupportedVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
inline constexpr const char* kLatestVersion = "2025-11-25";

struct outgoing {
  std::string json;             // one JSON-RPC message (or a batch array), compact, no newline
  std::string related_request;  // JSON text of the client request id it belongs to; empty if none
  bool final = false;           // the response that ends `related_request`
};
using sink = std::function<void(outgoing)>;

// What one incoming message turned out to be.
struct handled {
  bool parse_error = false;
  bool is_initialize = false;
  std::vector<std::string> requests;  // ids (JSON text) of the requests it carried; each gets a final outgoing
};

struct call_state;

// What one session may hold at once, so that one client cannot starve the others or grow the
// host's memory: requests in flight (each holds a worker thread while plugin code runs), and
// resource subscriptions (each to a resource that exists or a template can produce).
struct session_limits {
  size_t max_in_flight = 64;
  size_t max_subscriptions = 256;
  size_t max_subscription_bytes = 64 * 1024;  // their URIs together
};

class session : public std::enable_shared_from_this<session> {
 public:
  static std::shared_ptr<session> create(server& srv, sink send);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Handles one message (or, in 2025-03-26, a batch). Never throws; never runs plugin code on
  // the caller's thread.
  handled handle(std::string_view text);

  // Cancels what is in flight, gives running calls up to `grace_ms` to return, and detaches
  // from the server. Nothing is sent after it returns.
  void close(int grace_ms);

  // Cancels the client's request `id_json` (JSON text of its id): notifications/cancelled, or a
  // transport whose client went away without saying so. `why` starts the debug log line.
  void cancel_request(const std::string& id_json, std::string_view why);
  // Requests of this session running or queued on the workers.
  size_t in_flight() const { return in_flight_.load(); }

  bool initialized() const { return initialized_.load(); }
  std::string protocol_version() const;
  server& srv() { return server_; }

  // From the server: notifications for every session.
  void send_notification(const std::string& json);
  void send_log(toolhost_log_level_t level, std::string_view logger, std::string_view data_json);
  void resource_updated(std::string_view uri);

  // For call contexts (call_context.cpp).
  void send_progress(call_state& call, double progress, double total, const char* message);
  int32_t client_request(call_state& call, std::string_view method, std::string_view params_json,
                         uint32_t timeout_ms, std::string& out);
  bool client_can(std::string_view capability) const;
  std::string client_capabilities_json() const;
  void send(outgoing message);

 private:
  struct batch;
  struct pending_request;

  session(server& srv, sink send);

  void handle_one(const rapidjson::Value& message, const std::shared_ptr<batch>& batch, handled& out);
  void handle_request(const std::string& id, const std::string& method, const rapidjson::Value* params,
                      const std::shared_ptr<batch>& batch);
  void handle_notification(const std::string& method, const rapidjson::Value* params);
  void handle_response(const rapidjson::Value& message);

  void respond(const std::string& id, const std::string& result_json, const std::shared_ptr<batch>& batch);
  void respond_error(const std::string& id, int code, std::string_view message, const std::shared_ptr<batch>& batch,
                     std::string_view data_json = {});
  // Runs `work` on a worker thread after the server's plugins are loaded.
  void run_async(const std::string& id, const std::shared_ptr<batch>& batch, std::function<void()> work);
  void forget_call(const std::string& id);  // a tools/call that will not run

  std::string initialize(const rapidjson::Value* params);
  void tools_list(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& batch);
  void tools_call(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& batch);
  void resources_list(const std::string& id, const rapidjson::Value* params, bool templates,
                      const std::shared_ptr<batch>& batch);
  void resources_read(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& batch);
  void prompts_list(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& batch);
  void prompts_get(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& batch);
  void complete(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& batch);
  void subscribe(const std::string& id, const rapidjson::Value* params, bool on, const std::shared_ptr<batch>& batch);
  // A resource with this URI exists (registered, offered by a provider, or produced by a
  // template). Runs plugin code: on a worker only.
  bool resource_exists(const std::string& uri);

  void run_tool(const std::shared_ptr<call_state>& call);
  std::string finish_result(const std::shared_ptr<call_state>& call, std::string raw);
  std::string filtered(std::string json) const;

  server& server_;
  sink sink_;
  std::atomic<bool> initialized_{false};
  std::atomic<bool> closed_{false};
  mutable std::mutex mutex_;  // guards everything below
  std::string version_;
  std::string client_capabilities_text_ = "{}";  // parsed when asked: a Document costs 64 KiB
  int log_level_ = 1;  // info, until the client sets one
  std::map<std::string, std::shared_ptr<call_state>> calls_;  // in flight, by request id text
  std::map<int64_t, std::shared_ptr<pending_request>> pending_;
  int64_t next_request_id_ = 1;
  std::set<std::string> subscriptions_;
  size_t subscription_bytes_ = 0;
  const session_limits limits_;
  std::atomic<size_t> in_flight_{0};
};

}  // namespace toolhost::mcp
