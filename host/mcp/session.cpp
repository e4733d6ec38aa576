#include "host/mcp/session.hpp"

#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <thread>

#include <rapidjson/error/en.h>

#include <toolhost/sdk/json.hpp>

#include "host/log.hpp"
#include "host/mcp/call_context.hpp"
#include "host/mcp/input_required.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/request_checks.hpp"
#include "host/mcp/session_params.hpp"
#include "host/policy/privacy.hpp"
#include "host/utf8.hpp"

namespace toolhost::mcp {
namespace {

// A JSON number for a progress value, exactly: StrCat keeps six digits, so 6170527 would go out
// as 6170530 and two different reports could read as the same.
std::string progress_number(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) return std::to_string(static_cast<int64_t>(v));
  return sdk::to_json(rapidjson::Value(v));
}


}  // namespace

// The answers of a 2025-03-26 batch, sent together once the last request of it is answered.
struct batch {
  std::mutex mutex;
  std::vector<std::string> responses;
  size_t remaining = 0;
  bool sealed = false;
};

struct session::pending_request {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  bool is_error = false;
  std::string payload;  // the result, or the error object
};

// The most frequent first: a lookup scans the table.
const session::method* session::stateful_method(std::string_view name) {
  static constexpr method kTable[] = {
      {"tools/call", &session::tools_call, true},
      {"tools/list", &session::tools_list, true},
      {"ping", &session::ping, false},
      {"initialize", &session::initialize, false},
      {"resources/list", &session::resources_list, true},
      {"resources/templates/list", &session::resource_templates_list, true},
      {"resources/read", &session::resources_read, true},
      {"resources/subscribe", &session::resources_subscribe, true},
      {"resources/unsubscribe", &session::resources_unsubscribe, true},
      {"prompts/list", &session::prompts_list, true},
      {"prompts/get", &session::prompts_get, true},
      {"completion/complete", &session::complete, true},
      {"logging/setLevel", &session::set_log_level, true},
      // 2025-11-25's experimental tasks (session_tasks.cpp).
      {"tasks/get", &session::tasks_get, true},
      {"tasks/result", &session::tasks_result, true},
      {"tasks/list", &session::tasks_list, true},
      {"tasks/cancel", &session::tasks_cancel, true},
  };
  return find_method(kTable, name);
}

std::shared_ptr<session> session::create(server& srv, sink notifications) {
  std::shared_ptr<session> s(new session(srv, std::move(notifications)));
  srv.attach(s.get());
  return s;
}

session::session(server& srv, sink notifications)
    : server_(srv),
      notifications_(std::move(notifications)),
      uid_([] {
        static std::atomic<uint64_t> next{1};
        return next++;
      }()),
      server_info_json_(cat(R"({"name":"toolhost","title":)", sdk::quote(cat("toolhost: ", srv.name())),
                            R"(,"version":)", sdk::quote(TOOLHOST_VERSION), "}")),
      server_info_meta_(cat(R"("_meta":{"io.modelcontextprotocol/serverInfo":)", server_info_json_, "}")) {}

session::~session() { server_.detach(this); }

std::string session::protocol_version() const {
  std::lock_guard lock(mutex_);
  return version_.empty() ? kLatestVersion : version_;
}

std::string session::protocol_version(const request_context& request) const {
  return request.stateless ? request.version : protocol_version();
}

bool session::client_can(const request_context& request, std::string_view capability) const {
  auto doc = sdk::parse_json(client_capabilities_json(request));
  return doc && doc->IsObject() && sdk::member(*doc, capability) != nullptr;
}

std::string session::client_capabilities_json(const request_context& request) const {
  if (request.stateless) return request.client_capabilities;
  std::lock_guard lock(mutex_);
  return client_capabilities_text_;
}

void session::send(const sink& to, outgoing message) {
  if (closed_) return;
  // Every byte the server sends passes here: answers, progress, logs, list changes and requests
  // to the client alike get the privacy filter and the UTF-8 repair.
  if (server_.settings().privacy.hide_home_in_paths && !server_.home().empty()) {
    message.json = policy::hide_home_in_message(std::move(message.json), server_.home());
  }
  if (utf8::first_invalid(message.json) != std::string::npos) {
    if (!warned_utf8_.exchange(true)) {
      log::warning("session", "a plugin sent text that is not UTF-8; its bad bytes reach the client as U+FFFD");
    }
    message.json = utf8::repaired(message.json);
  }
  to(std::move(message));
}

// ---- Incoming messages ----------------------------------------------------------------------

handled session::handle(const std::string& text, const sink& reply, const request_headers& headers) {
  handled out;
  // JSON text is UTF-8 (RFC 8259): anything else is refused whole, so no malformed byte of it is
  // ever handed to a plugin or echoed in an error.
  if (const size_t bad = utf8::first_invalid(text); bad != std::string_view::npos) {
    out.parse_error = true;
    send(reply, {jsonrpc::error_message("null", jsonrpc::kParseError,
                                        cat("Parse error: the message is not valid UTF-8 (byte ", bad, ")")),
                 "", false});
    return out;
  }
  // Parsing was the largest part of a call's instructions (callgrind, bench/mcp), so:
  // - the first 8 KiB of the document and its parse stack come from this frame, not from malloc
  //   (sdk::scratch_memory);
  // - without a NUL inside, the text parses in place, from a copy that lives as long as the
  //   document: strings point into it instead of being copied again one by one, and RapidJSON
  //   scans a NUL-terminated text with SIMD (its sized input goes byte by byte). A NUL is never
  //   valid JSON, so the sized parse is there only to name where it is.
  // Nothing of `doc` outlives this call: handlers copy what they keep.
  sdk::scratch_memory<8192> values;
  sdk::scratch_memory<2048> stack;
  sdk::scratch_document doc(values.get(), 1024, stack.get());
  std::string in_place;
  if (std::memchr(text.data(), '\0', text.size()) == nullptr) {
    in_place = text;
    doc.ParseInsitu(in_place.data());
  } else {
    doc.Parse(text.data(), text.size());
  }
  if (doc.HasParseError()) {
    out.parse_error = true;
    send(reply, {jsonrpc::error_message("null", jsonrpc::kParseError,
                                        cat("Parse error: ", rapidjson::GetParseError_En(doc.GetParseError()),
                                            " at offset ", doc.GetErrorOffset())),
                 "", false});
    return out;
  }
  if (!doc.IsArray()) {
    handle_one(doc, text, -1, reply, nullptr, headers, out);
    return out;
  }
  // Batches exist only in 2025-03-26; every other version sends one message at a time.
  if (protocol_version() != "2025-03-26" || doc.Empty()) {
    send(reply, {jsonrpc::error_message("null", jsonrpc::kInvalidRequest,
                                        doc.Empty() ? "Invalid Request: empty batch"
                                                    : cat("Invalid Request: batches are not part of MCP ",
                                                          protocol_version(), "; send one message at a time")),
                 "", false});
    return out;
  }
  auto b = std::make_shared<batch>();
  int index = 0;
  for (const auto& item : doc.GetArray()) handle_one(item, text, index++, reply, b, headers, out);
  std::string combined;
  {
    std::lock_guard lock(b->mutex);
    b->sealed = true;
    if (b->remaining != 0 || b->responses.empty()) return out;
    combined = jsonrpc::join_batch(b->responses);
  }
  send(reply, {std::move(combined), "", false});
  return out;
}

void session::handle_one(const rapidjson::Value& message, std::string_view text, int index, const sink& reply,
                         const std::shared_ptr<batch>& b, const request_headers& headers, handled& out) {
  auto request = std::make_shared<request_context>();
  request->id = "null";
  request->reply = reply;
  request->batch = b;
  if (!message.IsObject()) {
    respond_error(request, jsonrpc::kInvalidRequest, "Invalid Request: a message must be a JSON object");
    return;
  }
  const rapidjson::Value* id = sdk::member(message, "id");
  const bool id_ok = id != nullptr && (id->IsString() || id->IsInt64() || id->IsUint64());
  if (id_ok) request->id = sdk::to_json(*id);
  const auto version = sdk::string_member(message, "jsonrpc");
  if (!version || *version != "2.0") {
    respond_error(request, jsonrpc::kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    return;
  }
  const rapidjson::Value* name = sdk::member(message, "method");
  if (name == nullptr) {
    if (id != nullptr && (sdk::member(message, "result") != nullptr || sdk::member(message, "error") != nullptr)) {
      handle_response(message);
      return;
    }
    respond_error(request, jsonrpc::kInvalidRequest, "Invalid Request: no \"method\"");
    return;
  }
  if (!name->IsString()) {
    respond_error(request, jsonrpc::kInvalidRequest, "Invalid Request: \"method\" must be a string");
    return;
  }
  const rapidjson::Value* params = sdk::member(message, "params");
  if (params != nullptr && !params->IsObject()) {
    if (id_ok) respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"params\" must be an object");
    return;
  }
  const std::string method_name(sdk::as_view(*name));
  if (id == nullptr) {
    handle_notification(method_name, params);
    return;
  }
  if (!id_ok) {
    respond_error(request, jsonrpc::kInvalidRequest, "Invalid Request: \"id\" must be a string or an integer");
    return;
  }
  if (b) {
    std::lock_guard lock(b->mutex);
    ++b->remaining;
  }
  out.requests.push_back(request->id);
  out.is_initialize = out.is_initialize || method_name == "initialize";
  // Any request may ask for progress; MCP's ProgressToken is a string or an integer.
  const rapidjson::Value* meta = object_param(params, "_meta");
  if (const rapidjson::Value* token = meta != nullptr ? sdk::member(*meta, "progressToken") : nullptr) {
    auto token_text = progress_token_text(*token, text, index);
    if (!token_text.ok()) return respond_error(request, jsonrpc::kInvalidParams, view(token_text.status().message()));
    request->progress_token = *std::move(token_text);
  }
  if (!b && is_stateless(meta, headers)) {
    out.is_initialize = false;
    out.stateless = true;
    request->method = method_name;
    return handle_stateless(request, params, meta, headers);
  }
  const method* m = stateful_method(method_name);
  if (m == nullptr) return respond_error(request, jsonrpc::kMethodNotFound, cat("Method not found: ", method_name));
  if (m->needs_initialize && !initialized_) {
    return respond_error(request, jsonrpc::kInvalidRequest,
                         cat("Invalid Request: send initialize before ", method_name));
  }
  (this->*m->run)(request, params);
}

void session::handle_notification(const std::string& method, const rapidjson::Value* params) {
  if (method == "notifications/cancelled") {
    const rapidjson::Value* id = params != nullptr ? sdk::member(*params, "requestId") : nullptr;
    if (id != nullptr) cancel_request(sdk::to_json(*id), "client cancelled");
  }
  // Others (initialized, roots/list_changed, progress...) need nothing from this host.
}

void session::handle_response(const rapidjson::Value& message) {
  const rapidjson::Value* id = sdk::member(message, "id");
  if (id == nullptr || !id->IsInt64()) return;  // not one of ours: our ids are integers
  std::shared_ptr<pending_request> p;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id->GetInt64());
    if (it == pending_.end()) return;
    p = it->second;
    pending_.erase(it);
  }
  std::lock_guard lock(p->mutex);
  if (const rapidjson::Value* error = sdk::member(message, "error")) {
    p->is_error = true;
    p->payload = sdk::to_json(*error);
  } else {
    p->payload = sdk::to_json(*sdk::member(message, "result"));
  }
  p->done = true;
  p->cv.notify_all();
}

// ---- Answers --------------------------------------------------------------------------------

void session::respond(const request_ptr& request, const std::string& result_json) {
  std::string message;
  if (request->stateless) {
    // Room for what append_stateless_result adds, so that the message is allocated once.
    message.reserve(request->id.size() + result_json.size() + server_info_meta_.size() + 96);
    append(message, R"({"jsonrpc":"2.0","id":)", request->id, R"(,"result":)");
    append_stateless_result(message, *request, result_json);
    message += '}';
  } else {
    message = jsonrpc::result_message(request->id, result_json);
  }
  if (!request->batch) return send(request->reply, {std::move(message), request->id, true});
  std::string combined;
  {
    std::lock_guard lock(request->batch->mutex);
    request->batch->responses.push_back(std::move(message));
    if (--request->batch->remaining != 0 || !request->batch->sealed) return;
    combined = jsonrpc::join_batch(request->batch->responses);
  }
  send(request->reply, {std::move(combined), "", false});
}

void session::respond_error(const request_ptr& request, int code, std::string_view message, std::string_view data_json,
                            int http_status) {
  std::string text = jsonrpc::error_message(request->id, code, message, data_json);
  const bool is_request = request->id != "null";
  if (!request->batch) {
    return send(request->reply, {std::move(text), is_request ? request->id : "", is_request, http_status});
  }
  std::string combined;
  {
    std::lock_guard lock(request->batch->mutex);
    request->batch->responses.push_back(std::move(text));
    if (!is_request) return;  // not counted: it was never a request
    if (--request->batch->remaining != 0 || !request->batch->sealed) return;
    combined = jsonrpc::join_batch(request->batch->responses);
  }
  send(request->reply, {std::move(combined), "", false});
}

void session::run_async(const request_ptr& request, std::function<void()> work) {
  if (in_flight_.fetch_add(1) >= limits_.max_in_flight) {
    --in_flight_;
    forget_call(request->id);
    respond_error(request, jsonrpc::kInternalError,
                  cat("Too many requests in flight: this session already has ", limits_.max_in_flight,
                      " running; wait for some to finish or cancel them"));
    return;
  }
  auto self = shared_from_this();
  const bool queued = server_.workers().submit([self, work = std::move(work)] {
    self->server_.wait_ready();
    work();
    --self->in_flight_;
  });
  if (!queued) {
    --in_flight_;
    forget_call(request->id);
    respond_error(request, jsonrpc::kInternalError, "Internal error: every worker is busy; retry later");
  }
}

void session::forget_call(const std::string& id) {
  std::lock_guard lock(mutex_);
  calls_.erase(id);
}

void session::forget_call(const std::shared_ptr<call_state>& call) {
  std::lock_guard lock(mutex_);
  if (auto it = calls_.find(call->id); it != calls_.end() && it->second == call) calls_.erase(it);
}

void session::cancel_request(const std::string& id_json, std::string_view why) {
  std::shared_ptr<call_state> call;
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(id_json);
    if (it != calls_.end()) call = it->second;
    if (listeners_.erase(id_json) != 0)
      log::debug("session", cat(why, " subscriptions/listen (request ", id_json, ")"));
  }
  if (!call) return;
  log::debug("session", cat(why, " ", call->name, " (request ", call->id, ")"));
  call->cancel();
}

// ---- Lifecycle and small methods --------------------------------------------------------------

void session::initialize(const request_ptr& request, const rapidjson::Value* params) {
  if (initialized_)
    return respond_error(request, jsonrpc::kInvalidRequest, "Invalid Request: the session is already initialized");
  const std::string requested = string_param(params, "protocolVersion");
  if (requested.empty())
    return respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"protocolVersion\" is required");
  const std::string version = listed(kSupportedVersions, requested) ? requested : kLatestVersion;
  {
    std::lock_guard lock(mutex_);
    version_ = version;
    if (const rapidjson::Value* caps = object_param(params, "capabilities"))
      client_capabilities_text_ = sdk::to_json(*caps);
  }
  initialized_ = true;
  // Instructions come from the plugins; give them a moment, but never stall the handshake on a
  // slow plugin.
  server_.wait_ready(std::chrono::milliseconds(1000));
  std::string result =
      cat(R"({"protocolVersion":)", sdk::quote(version),
          R"(,"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},)",
          R"("prompts":{"listChanged":true},"logging":{},"completions":{})",
          version == "2025-11-25" ? R"(,"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}})" : "",
          R"(},"serverInfo":{"name":"toolhost","title":)", sdk::quote(cat("toolhost: ", server_.name())),
          R"(,"version":)", sdk::quote(TOOLHOST_VERSION), "}");
  if (server_.ready()) {
    const std::string instructions = server_.instructions();
    if (!instructions.empty()) append(result, R"(,"instructions":)", sdk::quote(instructions));
  }
  result += '}';
  log::debug("session", cat("initialized with protocol ", version, " (client asked for ", requested, ")"));
  respond(request, result);
  initialize_answered_ = true;
}

void session::ping(const request_ptr& request, const rapidjson::Value*) { respond(request, "{}"); }

void session::set_log_level(const request_ptr& request, const rapidjson::Value* params) {
  const int level = log_level_index(string_param(params, "level"));
  if (level < 0) {
    return respond_error(request, jsonrpc::kInvalidParams,
                         "Invalid params: \"level\" must be one of debug, info, notice, warning, error, critical, "
                         "alert, emergency");
  }
  {
    std::lock_guard lock(mutex_);
    log_level_ = level;
  }
  respond(request, "{}");
}

void session::close(int grace_ms) {
  std::vector<std::shared_ptr<call_state>> calls;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, call] : calls_) calls.push_back(call);
  }
  // Calls may still finish and answer within the grace period; then they are cancelled.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mutex_);
      if (calls_.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& c : calls) c->cancel();
  // Its tasks can be read by nobody else: they end with it.
  server_.tasks().drop_owner(task_owner(request_context{}));
  closed_ = true;
  std::lock_guard lock(mutex_);
  listeners_.clear();
  for (auto& [id, p] : pending_) {
    std::lock_guard plock(p->mutex);
    p->done = true;
    p->is_error = true;
    p->payload = R"({"code":-32000,"message":"the session closed"})";
    p->cv.notify_all();
  }
  pending_.clear();
}

// ---- Server to client -----------------------------------------------------------------------

void session::send_notification(const std::string& json) {
  // A plugin may announce changes while initialize waits for it (a proxy whose upstream is
  // starting): the client lists everything after the handshake anyway, and nothing may precede
  // the initialize result.
  if (initialize_answered_) send(notifications_, {json, "", false});
  notify_listeners(json);
}

void session::send_log(toolhost_log_level_t level, std::string_view logger, std::string_view data_json) {
  {
    std::lock_guard lock(mutex_);
    if (level < log_level_) return;
  }
  send_notification(log_message(level, logger, data_json));
}

std::string session::log_message(toolhost_log_level_t level, std::string_view logger, std::string_view data_json) {
  const int index = std::clamp(level, 0, 7);
  std::string params = cat(R"({"level":")", kLogLevels[index], "\"");
  if (!logger.empty()) append(params, R"(,"logger":)", sdk::quote(logger));
  append(params, R"(,"data":)", data_json.empty() ? "null" : data_json, "}");
  return jsonrpc::notification_message("notifications/message", params);
}

void session::send_call_log(call_state& call, toolhost_log_level_t level, std::string_view logger,
                            std::string_view data_json) {
  if (!call.request || !call.request->stateless) return send_log(level, logger, data_json);
  // 2026-07-28: only a request that asked for log messages (at its level) gets them, on its stream.
  if (call.request->log_level < 0 || level < call.request->log_level) return;
  send(call.request->reply, {log_message(level, logger, data_json), call.id, false});
}

void session::resource_updated(std::string_view uri) {
  bool subscribed = false;
  {
    std::lock_guard lock(mutex_);
    subscribed = subscriptions_.count(std::string(uri)) != 0;
  }
  const std::string message =
      jsonrpc::notification_message("notifications/resources/updated", cat(R"({"uri":)", sdk::quote(uri), "}"));
  if (subscribed && initialize_answered_) send(notifications_, {message, "", false});
  notify_listeners(message);
}

void session::send_progress(call_state& call, double progress, double total, const char* message) {
  const std::shared_ptr<task> t = task_of(call);
  if (t) {
    // A task's progress is its status message; 2025-11-25 also keeps sending the notifications
    // to the token the call came with, on the session's own stream (the call's has ended).
    std::string text =
        total > 0 ? cat(progress_number(progress), "/", progress_number(total)) : progress_number(progress);
    if (message != nullptr && *message != 0) append(text, ": ", message);
    t->set_message(std::move(text));
    if (t->era == task_era::v2026 || call.progress_token.empty() || !initialize_answered_) return;
  } else if (call.answered || call.progress_token.empty()) {
    return;  // its time limit answered it already, or nobody asked for progress
  }
  std::string params = cat(R"({"progressToken":)", call.progress_token, R"(,"progress":)", progress_number(progress));
  if (total >= 0) append(params, R"(,"total":)", progress_number(total));
  if (message != nullptr) append(params, R"(,"message":)", sdk::quote(message));
  params += '}';
  const std::string note = jsonrpc::notification_message("notifications/progress", params);
  if (t) return send(notifications_, {note, "", false});
  send(call.request->reply, {note, call.id, false});
}

int32_t session::client_request(call_state& call, std::string_view method, std::string_view params_json,
                                uint32_t timeout_ms, std::string& out, std::string_view key) {
  const std::pair<std::string_view, std::string_view> needs[] = {
      {"elicitation/create", "elicitation"}, {"sampling/createMessage", "sampling"}, {"roots/list", "roots"}};
  for (const auto& [m, capability] : needs) {
    if (method != m) continue;
    if (!client_can(*call.request, capability)) {
      // 2026-07-28: a call that needs what the client did not declare fails with -32021.
      if (call.request->stateless) call.missing_capability = std::string(capability);
      return TOOLHOST_ERR_UNSUPPORTED;
    }
  }
  // The stateless era has no server-to-client requests: the question is answered from the
  // client's inputResponses, or ends the call with an InputRequiredResult that asks it.
  if (call.request->stateless) {
    if (!call.input_rounds || !sdk::parse_json(params_json)) return TOOLHOST_ERR_UNSUPPORTED;
    std::string params(params_json);
    std::string name = input_required::take_key(params);
    if (!key.empty()) name = std::string(key);
    std::string question = cat(R"({"method":)", sdk::quote(method), R"(,"params":)", params, "}");
    {
      std::lock_guard lock(call.input_mutex);
      if (name.empty()) name = cat("input-", ++call.unkeyed_questions);
      if (auto it = call.answers.find(name); it != call.answers.end()) {
        out = it->second;
        return TOOLHOST_OK;
      }
    }
    // A task asks while it runs: its tasks/get shows the question until tasks/update answers.
    if (const std::shared_ptr<task> t = task_of(call, true)) {
      auto answer = t->ask(std::move(question), [&call] { return call.cancelled.load(); });
      if (!answer) return TOOLHOST_ERR_CANCELLED;
      out = std::move(*answer);
      return TOOLHOST_OK;
    }
    std::lock_guard lock(call.input_mutex);
    for (const auto& [asked, request] : call.input_requests) {
      if (asked == name) return TOOLHOST_ERR_CANCELLED;
    }
    call.input_requests.emplace_back(name, std::move(question));
    return TOOLHOST_ERR_CANCELLED;
  }
  auto parsed = sdk::parse_json(params_json);
  if (!parsed || !parsed->IsObject()) return TOOLHOST_ERR_INVALID_ARGUMENT;
  // 2025-11-25: a task's questions say which task asks, and go on the session's own stream (the
  // call's ended with the task's handle); meanwhile the task is input_required.
  const std::shared_ptr<task> t = task_of(call);
  std::string params_text(params_json);
  if (t) {
    auto& a = parsed->GetAllocator();
    if (!parsed->HasMember("_meta") || !(*parsed)["_meta"].IsObject()) {
      parsed->RemoveMember("_meta");
      parsed->AddMember("_meta", rapidjson::Value(rapidjson::kObjectType), a);
    }
    rapidjson::Value related(rapidjson::kObjectType);
    related.AddMember("taskId", rapidjson::Value(t->id.c_str(), a), a);
    (*parsed)["_meta"].RemoveMember("io.modelcontextprotocol/related-task");
    (*parsed)["_meta"].AddMember("io.modelcontextprotocol/related-task", related, a);
    params_text = sdk::to_json(*parsed);
    t->waiting_for_input(true);
  }
  auto p = std::make_shared<pending_request>();
  int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      if (t) t->waiting_for_input(false);
      return TOOLHOST_ERR_CANCELLED;
    }
    id = next_request_id_++;
    pending_[id] = p;
  }
  std::string request_text =
      cat(R"({"jsonrpc":"2.0","id":)", id, R"(,"method":)", sdk::quote(method), R"(,"params":)", params_text, "}");
  if (t) {
    send(notifications_, {std::move(request_text), "", false});
  } else {
    send(call.request->reply, {std::move(request_text), call.id, false});
  }
  const auto deadline = timeout_ms == 0 ? std::chrono::steady_clock::time_point::max()
                                        : std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int32_t status = TOOLHOST_OK;
  {
    std::unique_lock lock(p->mutex);
    // Polls so that a cancelled call stops waiting without a wake-up path of its own.
    while (!p->done) {
      if (call.cancelled) {
        status = TOOLHOST_ERR_CANCELLED;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        status = TOOLHOST_ERR_TIMEOUT;
        break;
      }
      p->cv.wait_for(lock, std::chrono::milliseconds(20));
    }
    if (p->done) {
      out = p->payload;
      status = p->is_error ? TOOLHOST_ERR_REMOTE : TOOLHOST_OK;
    }
  }
  if (status == TOOLHOST_ERR_CANCELLED || status == TOOLHOST_ERR_TIMEOUT) {
    std::lock_guard lock(mutex_);
    pending_.erase(id);
  }
  if (t) t->waiting_for_input(false);
  return status;
}

}  // namespace toolhost::mcp
