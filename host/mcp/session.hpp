// One client's MCP session with a server: a dispatcher over MCP's methods (a table from method
// name to handler), each request handled with its own context (request_context: its id and the
// route its answer takes). See DESIGN.md beside this file for how the pieces fit.
//
// Transports feed it whole messages with handle(), each with the sink its answers go to: stdio
// passes its one writer, Streamable HTTP the stream of the POST that carried the message, so a
// response, its progress and the questions asked on its behalf travel with it, and nothing needs
// to guess later which request a message belongs to. Messages that belong to no request (list
// changes, resource updates, logs) go to the session's own sink. JSON-RPC ids live in the
// session: one client's ids never meet another's.
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
#include <utility>
#include <vector>

#include <rapidjson/document.h>

#include "host/mcp/server.hpp"

namespace toolhost::mcp {

// Protocol versions this host speaks through initialize (the stateful era), newest first.
inline constexpr std::string_view kSupportedVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
inline constexpr const char* kLatestVersion = "2025-11-25";
// Versions of the stateless era (each request names its version and capabilities in _meta).
inline constexpr std::string_view kStatelessVersions[] = {"2026-07-28"};

// Whether `version` is one of `versions` (kSupportedVersions or kStatelessVersions).
template <size_t N>
constexpr bool listed(const std::string_view (&versions)[N], std::string_view version) {
  for (std::string_view v : versions) {
    if (v == version) return true;
  }
  return false;
}

struct outgoing {
  std::string json;             // one JSON-RPC message (or a batch array), compact, no newline
  std::string related_request;  // JSON text of the client request id it belongs to; empty if none
  bool final = false;           // the answer that ends `related_request` (empty json: ended without one)
  int http_status = 0;          // 2026-07-28 errors that name their HTTP status (400, 404); 0: 200
};
using sink = std::function<void(outgoing)>;

// What the HTTP transport read from a POST's headers, for the 2026-07-28 checks that the headers
// agree with the body (stdio has none: `present` false).
struct request_headers {
  bool present = false;
  std::string_view protocol_version;  // MCP-Protocol-Version
  std::string_view method;            // Mcp-Method
  std::string_view name;              // Mcp-Name
  // Mcp-Param-{Name} headers: ({Name} in lower case, value).
  std::vector<std::pair<std::string, std::string_view>> params;
};

// What one incoming message turned out to be.
struct handled {
  bool parse_error = false;
  bool is_initialize = false;
  bool stateless = false;             // a 2026-07-28 request: it needs no session
  std::vector<std::string> requests;  // ids (JSON text) of the requests it carried; each gets a final outgoing
};

// What one session may hold at once, so that one client cannot starve the others or grow the
// host's memory: requests in flight (each holds a worker thread while plugin code runs), and
// resource subscriptions (each to a resource that exists or a template can produce).
struct session_limits {
  size_t max_in_flight = 64;
  size_t max_subscriptions = 256;
  size_t max_subscription_bytes = 64 * 1024;  // their URIs together
};

struct call_state;
struct batch;

// One request's context, from dispatch to its answer.
struct request_context {
  std::string id;                       // JSON text of the client's id ("null" for a message without one)
  sink reply;                           // where its answer and everything related to it go
  std::shared_ptr<struct batch> batch;  // 2025-03-26 batches: the answers gathered into one reply
  std::string progress_token;           // params._meta.progressToken as the client wrote it; empty if none
  // 2026-07-28: the request carries its own context in _meta, and its result says so.
  bool stateless = false;
  std::string method;
  std::string version;  // its protocol version
  std::string client_capabilities = "{}";
  bool declares_tasks = false;  // its clientCapabilities name the io.modelcontextprotocol/tasks extension
  int log_level = -1;           // from _meta's logLevel; -1: the client wants no log messages
  // Came over Streamable HTTP: its Mcp-Param-* headers must agree with a tool's x-mcp-header
  // arguments (toolhost/sdk/param_headers.hpp); ({Name} in lower case, raw value).
  bool http = false;
  std::vector<std::pair<std::string, std::string>> param_headers;
};
using request_ptr = std::shared_ptr<const request_context>;

class session : public std::enable_shared_from_this<session> {
 public:
  // `notifications` receives what belongs to no request.
  static std::shared_ptr<session> create(server& srv, sink notifications);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Handles one message (or, in 2025-03-26, a batch); its answers go to `reply`. Never throws;
  // never runs plugin code on the caller's thread.
  handled handle(const std::string& text, const sink& reply, const request_headers& headers = {});

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
  // A question to the client on behalf of `call`. In 2026-07-28 it is answered from the call's
  // input-required answers or noted for its InputRequiredResult under `key` (empty: the params'
  // own key, else the next "input-N"), and TOOLHOST_ERR_CANCELLED says it has no answer yet.
  int32_t client_request(call_state& call, std::string_view method, std::string_view params_json, uint32_t timeout_ms,
                         std::string& out, std::string_view key = {});
  // The capabilities the client declared: at initialize, or in a 2026-07-28 request's _meta.
  bool client_can(const request_context& request, std::string_view capability) const;
  std::string client_capabilities_json(const request_context& request) const;
  std::string protocol_version(const request_context& request) const;
  // A log message of a call: a 2026-07-28 request gets those at its own level on its own stream.
  void send_call_log(call_state& call, toolhost_log_level_t level, std::string_view logger, std::string_view data_json);

 private:
  struct pending_request;
  using handler = void (session::*)(const request_ptr& request, const rapidjson::Value* params);
  struct method {
    std::string_view name;
    handler run;
    bool needs_initialize;  // stateful era only
  };
  // A method table is scanned, lengths compared first: most names differ in length, so a lookup
  // costs a few integer compares and one memcmp, where a std::map compared whole strings at each
  // of its levels (300 instructions a 2026-07-28 tools/call, callgrind, bench/mcp).
  template <size_t N>
  static const method* find_method(const method (&table)[N], std::string_view name) {
    for (const method& m : table) {
      if (m.name == name) return &m;
    }
    return nullptr;
  }
  // The stateful era's table (session.cpp) and the 2026-07-28 era's (session_stateless.cpp).
  static const method* stateful_method(std::string_view name);
  static const method* stateless_method(std::string_view name);

  session(server& srv, sink notifications);

  // ---- Framing and dispatch (session.cpp) ----
  // `text` is the raw message (`index` the item's place in a batch, or -1), for what the parsed
  // value loses: integers past 64 bits.
  void handle_one(const rapidjson::Value& message, std::string_view text, int index, const sink& reply,
                  const std::shared_ptr<batch>& b, const request_headers& headers, handled& out);
  void handle_notification(const std::string& method, const rapidjson::Value* params);
  // ---- The 2026-07-28 era (session_stateless.cpp) ----
  // A request whose _meta names a protocol version, or that came with a 2026-07-28 header.
  // `meta`: params._meta when it is an object, else nullptr.
  static bool is_stateless(const rapidjson::Value* meta, const request_headers& headers);
  void handle_stateless(const std::shared_ptr<request_context>& request, const rapidjson::Value* params,
                        const rapidjson::Value* meta, const request_headers& headers);
  void discover(const request_ptr& request, const rapidjson::Value* params);
  void subscriptions_listen(const request_ptr& request, const rapidjson::Value* params);
  // What a 2026-07-28 result carries beyond the method's own fields, appended to `out`.
  void append_stateless_result(std::string& out, const request_context& request, std::string_view result_json) const;
  std::string stateless_result(const request_context& request, std::string_view result_json) const;
  // ---- 2026-07-28 input-required rounds (session_input_required.cpp) ----
  // Binds `call` (a tools/call, prompts/get or resources/read of `name` with `args`) to its
  // request and reads the requestState and inputResponses a later round brings. False when it
  // answered the request with an error (a state refused).
  bool begin_input_rounds(const request_ptr& request, const rapidjson::Value* params, std::string_view name,
                          std::string_view args, call_state& call);
  // After the plugin ran: answers with -32021 when it needed a capability the client lacks, or
  // with an InputRequiredResult when it asked what the client has not answered yet. False when
  // neither applies (the call's own result is the answer). `args`: the call's arguments, which
  // its requestState is bound to with its method and name.
  bool answered_with_input_round(const request_ptr& request, call_state& call, std::string_view args);
  // How the request's Mcp-Param-* headers disagree with `tool`'s x-mcp-header arguments in
  // `args` (toolhost/sdk/param_headers.hpp); empty when they agree or the request did not come over HTTP.
  static std::string param_header_mismatch(const request_context& request, const catalog::tool_target& tool,
                                           const std::string& args);
  // Sends a notification to the subscriptions/listen streams that asked for its kind.
  void notify_listeners(const std::string& json);
  struct listener;
  // Sends `doc`, a notification, on `l`'s stream, its _meta naming the subscription.
  void send_to_listener(const listener& l, rapidjson::Document& doc);
  static std::string log_message(toolhost_log_level_t level, std::string_view logger, std::string_view data_json);
  std::string capabilities_json() const;
  void handle_response(const rapidjson::Value& message);
  void respond(const request_ptr& request, const std::string& result_json);
  void respond_error(const request_ptr& request, int code, std::string_view message, std::string_view data_json = {},
                     int http_status = 0);
  // Runs `work` on a worker thread after the server's plugins are loaded, within the session's
  // limit of requests in flight.
  void run_async(const request_ptr& request, std::function<void()> work);
  void forget_call(const std::string& id);  // a tools/call that will not run
  // A tools/call that ended: forgotten unless its id already belongs to a newer call.
  void forget_call(const std::shared_ptr<call_state>& call);
  // Every message the session sends goes through here: the privacy filter and the UTF-8 repair.
  void send(const sink& to, outgoing message);

  // ---- Lifecycle and small methods (session.cpp) ----
  void initialize(const request_ptr& request, const rapidjson::Value* params);
  void ping(const request_ptr& request, const rapidjson::Value* params);
  void set_log_level(const request_ptr& request, const rapidjson::Value* params);

  // ---- Tools (session_tools.cpp) ----
  void tools_list(const request_ptr& request, const rapidjson::Value* params);
  void tools_call(const request_ptr& request, const rapidjson::Value* params);
  // `target`: the plugin that serves the call's name (catalog::find_tool), if any.
  std::string run_tool(const std::shared_ptr<call_state>& call, const std::string& args,
                       const std::optional<catalog::tool_target>& target);
  // The call's time limit passed: answers it with a tool error and cancels it.
  void time_out(const std::shared_ptr<call_state>& call, uint32_t limit_ms);
  std::string finish_result(const std::shared_ptr<call_state>& call, std::string raw);

  // ---- Tasks (session_tasks.cpp) ----
  // Who owns the tasks a request makes: this session in the initialize era, the stateless era
  // (whose task ids are unguessable bearer handles) otherwise.
  std::string task_owner(const request_context& request) const;
  // Decides whether `call` of a tool with `flags` may become a task; false when it must not run
  // (the error is set on the call).
  bool offer_task(const std::shared_ptr<call_state>& call, uint32_t flags);
  // The call's first moments are over (or, in 2025-11-25, it starts): it becomes a task and the
  // request is answered with the task's handle.
  void become_task(const std::shared_ptr<call_state>& call);
  // The call ended: true when it had become a task, whose result or error it now is.
  bool finish_task(const std::shared_ptr<call_state>& call, const std::string& result);
  // The task a call became, or nullptr; with `close`, a call that has not become one never will.
  static std::shared_ptr<task> task_of(call_state& call, bool close = false);
  // subscriptions/listen's taskIds: those of the request's own tasks that still run. False when
  // it answered the request with an error (the extension not declared, too many ids).
  bool tasks_to_watch(const request_ptr& request, const rapidjson::Value& ids, std::vector<std::shared_ptr<task>>& out);
  // After the acknowledgement: `l` gets notifications/tasks for `tasks` (session_stateless.cpp).
  void watch_tasks(const std::shared_ptr<listener>& l, const std::vector<std::shared_ptr<task>>& tasks);
  std::shared_ptr<task> find_task(const request_ptr& request, const rapidjson::Value* params);
  void tasks_get(const request_ptr& request, const rapidjson::Value* params);
  void tasks_update(const request_ptr& request, const rapidjson::Value* params);
  void tasks_cancel(const request_ptr& request, const rapidjson::Value* params);
  void tasks_result(const request_ptr& request, const rapidjson::Value* params);
  void tasks_list(const request_ptr& request, const rapidjson::Value* params);

  // ---- Resources, prompts, completion (session_resources.cpp) ----
  void resources_list(const request_ptr& request, const rapidjson::Value* params);
  void resource_templates_list(const request_ptr& request, const rapidjson::Value* params);
  void resources_read(const request_ptr& request, const rapidjson::Value* params);
  void resources_subscribe(const request_ptr& request, const rapidjson::Value* params);
  void resources_unsubscribe(const request_ptr& request, const rapidjson::Value* params);
  void prompts_list(const request_ptr& request, const rapidjson::Value* params);
  void prompts_get(const request_ptr& request, const rapidjson::Value* params);
  void complete(const request_ptr& request, const rapidjson::Value* params);
  // Answers a list request with one page of `items`.
  void respond_page(const request_ptr& request, const char* field,
                    const std::vector<std::pair<std::string, std::string>>& items, const std::string& cursor);
  bool subscription_refused(const request_ptr& request, const std::string& uri);

  server& server_;
  sink notifications_;
  const uint64_t uid_;  // names the session as the owner of its tasks
  // Who answered, as 2026-07-28 results say in _meta: made once, used in every such result.
  const std::string server_info_json_;
  const std::string server_info_meta_;  // "_meta":{"io.modelcontextprotocol/serverInfo":...}
  const session_limits limits_;
  std::atomic<bool> initialized_{false};
  // The initialize result has gone out: nothing may precede it, so notifications wait for this.
  std::atomic<bool> initialize_answered_{false};
  std::atomic<bool> warned_utf8_{false};
  std::atomic<bool> closed_{false};
  std::atomic<size_t> in_flight_{0};
  mutable std::mutex mutex_;  // guards everything below
  std::string version_;
  std::string client_capabilities_text_ = "{}";               // parsed when asked: a Document costs 64 KiB
  int log_level_ = 1;                                         // info, until the client sets one
  std::map<std::string, std::shared_ptr<call_state>> calls_;  // in flight, by request id text
  std::map<int64_t, std::shared_ptr<pending_request>> pending_;
  int64_t next_request_id_ = 1;
  std::set<std::string> subscriptions_;
  std::set<std::string> allowed_for_session_;  // permission kinds the person allowed for this session
  size_t subscription_bytes_ = 0;
  struct listener;
  std::map<std::string, std::shared_ptr<listener>> listeners_;  // subscriptions/listen, by request id
};

}  // namespace toolhost::mcp
