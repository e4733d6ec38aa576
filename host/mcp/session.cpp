#include "host/mcp/session.hpp"

#include <toolhost/sdk/strings.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>

#include <absl/strings/escaping.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/log.hpp"
#include "host/mcp/call_context.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/pagination.hpp"
#include "host/mcp/uri_template.hpp"
#include "host/policy/permissions.hpp"
#include "host/policy/privacy.hpp"

namespace toolhost::mcp {
namespace {

// A JSON number for a progress value, exactly: StrCat keeps six digits, so 6170527 would go out
// as 6170530 and two different reports could read as the same.
std::string progress_number(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) return std::to_string(static_cast<int64_t>(v));
  return sdk::to_json(rapidjson::Value(v));
}

constexpr const char* kLevels[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

int level_index(std::string_view name) {
  for (int i = 0; i < 8; ++i) {
    if (name == kLevels[i]) return i;
  }
  return -1;
}

bool version_supported(std::string_view v) {
  return std::any_of(std::begin(kSupportedVersions), std::end(kSupportedVersions), [v](const char* s) { return v == s; });
}

const rapidjson::Value* object_param(const rapidjson::Value* params, std::string_view name) {
  const rapidjson::Value* v = params != nullptr ? sdk::member(*params, name) : nullptr;
  return v != nullptr && v->IsObject() ? v : nullptr;
}

std::string string_param(const rapidjson::Value* params, std::string_view name) {
  return params != nullptr ? std::string(sdk::string_member(*params, name).value_or("")) : std::string();
}

// {"name": NAME, ...} -> NAME, for cursors over listings.
std::string listing_key(const std::string& listing, const char* key) {
  auto doc = sdk::parse_json(listing);
  return doc ? std::string(sdk::string_member(*doc, key).value_or("")) : std::string();
}

}  // namespace

struct session::batch {
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

std::shared_ptr<session> session::create(server& srv, sink send) {
  std::shared_ptr<session> s(new session(srv, std::move(send)));
  srv.attach(s.get());
  return s;
}

session::session(server& srv, sink send) : server_(srv), sink_(std::move(send)) {
  client_capabilities_.SetObject();
}

session::~session() { server_.detach(this); }

std::string session::protocol_version() const {
  std::lock_guard lock(mutex_);
  return version_.empty() ? kLatestVersion : version_;
}

bool session::client_can(std::string_view capability) const {
  std::lock_guard lock(mutex_);
  return sdk::member(client_capabilities_, capability) != nullptr;
}

std::string session::client_capabilities_json() const {
  std::lock_guard lock(mutex_);
  return client_capabilities_text_;
}

void session::send(outgoing message) {
  if (closed_) return;
  sink_(std::move(message));
}

// ---- Incoming messages ----------------------------------------------------------------------

handled session::handle(std::string_view text) {
  handled out;
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError()) {
    out.parse_error = true;
    send({jsonrpc::error_message("null", jsonrpc::kParseError,
                                 cat("Parse error: ", rapidjson::GetParseError_En(doc.GetParseError()),
                                              " at offset ", doc.GetErrorOffset())),
          "", false});
    return out;
  }
  if (!doc.IsArray()) {
    handle_one(doc, nullptr, out);
    return out;
  }
  // Batches exist only in 2025-03-26; every other version sends one message at a time.
  if (protocol_version() != "2025-03-26" || doc.Empty()) {
    send({jsonrpc::error_message("null", jsonrpc::kInvalidRequest,
                                 doc.Empty() ? "Invalid Request: empty batch"
                                             : cat("Invalid Request: batches are not part of MCP ",
                                                            protocol_version(), "; send one message at a time")),
          "", false});
    return out;
  }
  auto b = std::make_shared<batch>();
  for (const auto& item : doc.GetArray()) handle_one(item, b, out);
  std::string combined;
  {
    std::lock_guard lock(b->mutex);
    b->sealed = true;
    if (b->remaining != 0 || b->responses.empty()) return out;
    combined = jsonrpc::join_batch(b->responses);
  }
  send({std::move(combined), "", false});
  return out;
}

void session::handle_one(const rapidjson::Value& message, const std::shared_ptr<batch>& b, handled& out) {
  if (!message.IsObject()) {
    respond_error("null", jsonrpc::kInvalidRequest, "Invalid Request: a message must be a JSON object", b);
    return;
  }
  const rapidjson::Value* id = sdk::member(message, "id");
  const bool id_ok = id != nullptr && (id->IsString() || id->IsInt64() || id->IsUint64());
  const std::string id_text = id_ok ? sdk::to_json(*id) : "null";
  const auto version = sdk::string_member(message, "jsonrpc");
  if (!version || *version != "2.0") {
    respond_error(id_text, jsonrpc::kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"", b);
    return;
  }
  const rapidjson::Value* method = sdk::member(message, "method");
  if (method == nullptr) {
    if (id != nullptr && (sdk::member(message, "result") != nullptr || sdk::member(message, "error") != nullptr)) {
      handle_response(message);
      return;
    }
    respond_error(id_text, jsonrpc::kInvalidRequest, "Invalid Request: no \"method\"", b);
    return;
  }
  if (!method->IsString()) {
    respond_error(id_text, jsonrpc::kInvalidRequest, "Invalid Request: \"method\" must be a string", b);
    return;
  }
  const rapidjson::Value* params = sdk::member(message, "params");
  if (params != nullptr && !params->IsObject()) {
    if (id_ok) respond_error(id_text, jsonrpc::kInvalidParams, "Invalid params: \"params\" must be an object", b);
    return;
  }
  const std::string name(sdk::as_view(*method));
  if (id == nullptr) {
    handle_notification(name, params);
    return;
  }
  if (!id_ok) {
    respond_error("null", jsonrpc::kInvalidRequest, "Invalid Request: \"id\" must be a string or an integer", b);
    return;
  }
  if (b) {
    std::lock_guard lock(b->mutex);
    ++b->remaining;
  }
  out.requests.push_back(id_text);
  out.is_initialize = out.is_initialize || name == "initialize";
  handle_request(id_text, name, params, b);
}

void session::handle_request(const std::string& id, const std::string& method, const rapidjson::Value* params,
                             const std::shared_ptr<batch>& b) {
  if (method == "initialize") {
    if (initialized_) {
      respond_error(id, jsonrpc::kInvalidRequest, "Invalid Request: the session is already initialized", b);
      return;
    }
    const std::string requested = string_param(params, "protocolVersion");
    if (requested.empty()) {
      respond_error(id, jsonrpc::kInvalidParams, "Invalid params: \"protocolVersion\" is required", b);
      return;
    }
    respond(id, initialize(params), b);
    return;
  }
  if (method == "ping") {
    respond(id, "{}", b);
    return;
  }
  if (!initialized_) {
    respond_error(id, jsonrpc::kInvalidRequest,
                  cat("Invalid Request: send initialize before ", method), b);
    return;
  }
  if (method == "tools/list") return tools_list(id, params, b);
  if (method == "tools/call") return tools_call(id, params, b);
  if (method == "resources/list") return resources_list(id, params, false, b);
  if (method == "resources/templates/list") return resources_list(id, params, true, b);
  if (method == "resources/read") return resources_read(id, params, b);
  if (method == "prompts/list") return prompts_list(id, params, b);
  if (method == "prompts/get") return prompts_get(id, params, b);
  if (method == "completion/complete") return complete(id, params, b);
  if (method == "logging/setLevel") {
    const int level = level_index(string_param(params, "level"));
    if (level < 0) {
      respond_error(id, jsonrpc::kInvalidParams,
                    "Invalid params: \"level\" must be one of debug, info, notice, warning, error, critical, alert, "
                    "emergency",
                    b);
      return;
    }
    {
      std::lock_guard lock(mutex_);
      log_level_ = level;
    }
    respond(id, "{}", b);
    return;
  }
  if (method == "resources/subscribe" || method == "resources/unsubscribe") {
    const std::string uri = string_param(params, "uri");
    if (uri.empty()) {
      respond_error(id, jsonrpc::kInvalidParams, "Invalid params: \"uri\" is required", b);
      return;
    }
    {
      std::lock_guard lock(mutex_);
      if (method == "resources/subscribe") {
        subscriptions_.insert(uri);
      } else {
        subscriptions_.erase(uri);
      }
    }
    respond(id, "{}", b);
    return;
  }
  respond_error(id, jsonrpc::kMethodNotFound, cat("Method not found: ", method), b);
}

void session::handle_notification(const std::string& method, const rapidjson::Value* params) {
  if (method == "notifications/initialized") return;
  if (method == "notifications/cancelled") {
    const rapidjson::Value* id = params != nullptr ? sdk::member(*params, "requestId") : nullptr;
    if (id == nullptr) return;
    std::shared_ptr<call_state> call;
    {
      std::lock_guard lock(mutex_);
      auto it = calls_.find(sdk::to_json(*id));
      if (it != calls_.end()) call = it->second;
    }
    if (call) {
      log::debug("session", cat("client cancelled ", call->name, " (request ", call->id, ")"));
      call->cancel();
    }
    return;
  }
  // Other notifications (roots/list_changed, progress...) need nothing from this host.
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

void session::respond(const std::string& id, const std::string& result_json, const std::shared_ptr<batch>& b) {
  std::string message = jsonrpc::result_message(id, result_json);
  if (!b) {
    send({std::move(message), id, true});
    return;
  }
  std::string combined;
  {
    std::lock_guard lock(b->mutex);
    b->responses.push_back(std::move(message));
    if (--b->remaining != 0 || !b->sealed) return;
    combined = jsonrpc::join_batch(b->responses);
  }
  send({std::move(combined), "", false});
}

void session::respond_error(const std::string& id, int code, std::string_view message,
                            const std::shared_ptr<batch>& b, std::string_view data_json) {
  std::string text = jsonrpc::error_message(id, code, message, data_json);
  if (!b) {
    send({std::move(text), id == "null" ? "" : id, id != "null"});
    return;
  }
  std::string combined;
  {
    std::lock_guard lock(b->mutex);
    b->responses.push_back(std::move(text));
    if (id == "null") return;  // not counted: it was never a request
    if (--b->remaining != 0 || !b->sealed) return;
    combined = jsonrpc::join_batch(b->responses);
  }
  send({std::move(combined), "", false});
}

void session::run_async(const std::string& id, const std::shared_ptr<batch>& b, std::function<void()> work) {
  auto self = shared_from_this();
  const bool queued = server_.workers().submit([self, work = std::move(work)] {
    self->server_.wait_ready();
    work();
  });
  if (!queued) respond_error(id, jsonrpc::kInternalError, "Internal error: too many requests in flight; retry later", b);
}

std::string session::filtered(std::string json) const {
  if (!server_.settings().privacy.hide_home_in_paths || server_.home().empty() ||
      json.find(server_.home()) == std::string::npos) {
    return json;
  }
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError()) return json;
  policy::hide_home(doc, doc.GetAllocator(), server_.home());
  return sdk::to_json(doc);
}

// ---- Lifecycle ------------------------------------------------------------------------------

std::string session::initialize(const rapidjson::Value* params) {
  const std::string requested = string_param(params, "protocolVersion");
  const std::string version = version_supported(requested) ? requested : kLatestVersion;
  {
    std::lock_guard lock(mutex_);
    version_ = version;
    if (const rapidjson::Value* caps = object_param(params, "capabilities")) {
      client_capabilities_.CopyFrom(*caps, client_capabilities_.GetAllocator());
      client_capabilities_text_ = sdk::to_json(*caps);
    }
  }
  initialized_ = true;
  // Instructions come from the plugins; give them a moment, but never stall the handshake on a
  // slow plugin.
  server_.wait_ready(std::chrono::milliseconds(1000));
  std::string result = cat(
      R"({"protocolVersion":)", sdk::quote(version),
      R"(,"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},)",
      R"("prompts":{"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolhost","title":)",
      sdk::quote(cat("toolhost: ", server_.name())), R"(,"version":)", sdk::quote(TOOLHOST_VERSION), "}");
  if (server_.ready()) {
    const std::string instructions = server_.instructions();
    if (!instructions.empty()) append(result, R"(,"instructions":)", sdk::quote(instructions));
  }
  result += '}';
  log::debug("session", cat("initialized with protocol ", version, " (client asked for ", requested, ")"));
  return result;
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
  closed_ = true;
  std::lock_guard lock(mutex_);
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
  if (initialized_) send({json, "", false});
}

void session::send_log(toolhost_log_level_t level, std::string_view logger, std::string_view data_json) {
  {
    std::lock_guard lock(mutex_);
    if (level < log_level_) return;
  }
  const int index = std::clamp(level, 0, 7);
  std::string params = cat(R"({"level":")", kLevels[index], "\"");
  if (!logger.empty()) append(params, R"(,"logger":)", sdk::quote(logger));
  append(params, R"(,"data":)", data_json.empty() ? "null" : data_json, "}");
  send_notification(jsonrpc::notification_message("notifications/message", params));
}

void session::resource_updated(std::string_view uri) {
  {
    std::lock_guard lock(mutex_);
    if (subscriptions_.count(std::string(uri)) == 0) return;
  }
  send_notification(
      jsonrpc::notification_message("notifications/resources/updated", cat(R"({"uri":)", sdk::quote(uri), "}")));
}

void session::send_progress(call_state& call, double progress, double total, const char* message) {
  std::string params = cat(R"({"progressToken":)", call.progress_token, R"(,"progress":)", progress_number(progress));
  if (total >= 0) append(params, R"(,"total":)", progress_number(total));
  if (message != nullptr) append(params, R"(,"message":)", sdk::quote(message));
  params += '}';
  send({jsonrpc::notification_message("notifications/progress", params), call.id, false});
}

int32_t session::client_request(call_state& call, std::string_view method, std::string_view params_json,
                                uint32_t timeout_ms, std::string& out) {
  const std::pair<std::string_view, std::string_view> needs[] = {
      {"elicitation/create", "elicitation"}, {"sampling/createMessage", "sampling"}, {"roots/list", "roots"}};
  for (const auto& [m, capability] : needs) {
    if (method == m && !client_can(capability)) return TOOLHOST_ERR_UNSUPPORTED;
  }
  if (!sdk::parse_json(params_json)) return TOOLHOST_ERR_INVALID_ARGUMENT;
  auto p = std::make_shared<pending_request>();
  int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return TOOLHOST_ERR_CANCELLED;
    id = next_request_id_++;
    pending_[id] = p;
  }
  send({cat(R"({"jsonrpc":"2.0","id":)", id, R"(,"method":)", sdk::quote(method), R"(,"params":)",
                     params_json, "}"),
        call.id, false});
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
  return status;
}

// ---- Tools ----------------------------------------------------------------------------------

void session::tools_list(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& b) {
  const std::string cursor = string_param(params, "cursor");
  run_async(id, b, [this, id, cursor, b] {
    std::vector<std::pair<std::string, std::string>> items;  // name, listing
    for (const auto& t : server_.registry().tools()) items.emplace_back(t.name, t.listing);
    for (auto& [name, listing] : server_.provided_tool_listings_named()) items.emplace_back(name, listing);
    auto page = paginate(items, cursor, server_.global().page_size);
    if (!page.ok()) return respond_error(id, jsonrpc::kInvalidParams, view(page.status().message()), b);
    respond(id, page_result("tools", items, *page), b);
  });
}

void session::tools_call(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& b) {
  const std::string name = string_param(params, "name");
  if (name.empty()) {
    respond_error(id, jsonrpc::kInvalidParams, "Invalid params: \"name\" (the tool to call) is required", b);
    return;
  }
  const rapidjson::Value* arguments = params != nullptr ? sdk::member(*params, "arguments") : nullptr;
  if (arguments != nullptr && !arguments->IsObject()) {
    respond_error(id, jsonrpc::kInvalidParams, "Invalid params: \"arguments\" must be an object", b);
    return;
  }
  auto call = std::make_shared<call_state>();
  call->id = id;
  call->name = name;
  if (const rapidjson::Value* meta = object_param(params, "_meta")) {
    call->meta_json = sdk::to_json(*meta);
    if (const rapidjson::Value* token = sdk::member(*meta, "progressToken");
        token != nullptr && (token->IsString() || token->IsNumber())) {
      call->progress_token = sdk::to_json(*token);
    }
  }
  const std::string args = arguments != nullptr ? sdk::to_json(*arguments) : "{}";
  {
    std::lock_guard lock(mutex_);
    if (!calls_.emplace(id, call).second) {
      respond_error(id, jsonrpc::kInvalidRequest, cat("Invalid Request: request id ", id, " is already in use"),
                    b);
      return;
    }
  }
  run_async(id, b, [this, call, args, b] {
    std::string result = [&]() -> std::string {
      const plugins::tool* t = server_.registry().find_tool(call->name);
      std::optional<provided_tool> provided;
      if (t == nullptr) provided = server_.find_provided_tool(call->name);
      if (t == nullptr && !provided) {
        // A name nobody listed may still be one a provider hides on purpose (a proxy's deny
        // list) and wants to explain; providers answer such names only with an error.
        call_context context(shared_from_this(), call);
        for (const auto& p : server_.registry().providers()) {
          if (p.desc.call_tool == nullptr) continue;
          sdk::string_writer out;
          if (p.desc.call_tool(p.desc.user_data, context.raw(), call->name.c_str(), args.data(), args.size(),
                               out.raw())) {
            return finish_result(call, out.take());
          }
        }
        return "";
      }

      const std::string kind_id = t != nullptr ? t->permission_kind : provided->permission_kind;
      const plugins::permission_kind* kind = server_.registry().find_kind(kind_id);
      if (kind == nullptr) kind = server_.registry().find_kind(plugins::kRunKind);
      const uint32_t flags = t != nullptr ? t->flags : 0;
      const bool suggestion = (flags & TOOLHOST_TOOL_SUGGESTION) != 0 ||
                              ((flags & TOOLHOST_TOOL_REVIEWABLE) != 0 && server_.settings().review_edits);
      call_context context(shared_from_this(), call);
      policy::tool_request request{call->name,  server_.name(),           kind->id, kind->label,
                                   server_.permission_of(*kind), suggestion, server_.global().path};
      policy::decision d = policy::authorize(request, [&](const std::string& message, const std::string& schema)
                                                          -> std::optional<policy::answer> {
        const std::string params = cat(R"({"mode":"form","message":)", sdk::quote(message),
                                                R"(,"requestedSchema":)", schema, "}");
        std::string answer;
        if (client_request(*call, "elicitation/create", params, 0, answer) != TOOLHOST_OK) {
          if (!client_can("elicitation")) return std::nullopt;
          return policy::answer{"cancel", false};
        }
        auto doc = sdk::parse_json(answer);
        policy::answer a;
        a.action = doc ? std::string(sdk::string_member(*doc, "action").value_or("cancel")) : "cancel";
        const rapidjson::Value* content = doc ? sdk::member(*doc, "content") : nullptr;
        const rapidjson::Value* approve = content != nullptr ? sdk::member(*content, "approve") : nullptr;
        a.approved = approve != nullptr && approve->IsBool() && approve->GetBool();
        return a;
      });
      if (!d.allowed) return sdk::result::error(d.message).to_json();
      if (call->cancelled) return "{}";

      sdk::string_writer out;
      if (t != nullptr) {
        std::unique_lock<std::mutex> serial;
        if (t->serial) serial = std::unique_lock<std::mutex>(*t->serial);
        if (call->cancelled) return "{}";  // cancelled while it waited for its turn
        t->call(t->user_data, context.raw(), args.data(), args.size(), out.raw());
      } else if (!provided->provider->desc.call_tool(provided->provider->desc.user_data, context.raw(),
                                                     call->name.c_str(), args.data(), args.size(), out.raw())) {
        return "";
      }
      return finish_result(call, out.take());
    }();
    {
      std::lock_guard lock(mutex_);
      calls_.erase(call->id);
    }
    if (call->cancelled) {  // the client gave up on it: nothing more is sent for this request
      send({"", call->id, true});
      return;
    }
    if (result.empty()) {
      return respond_error(call->id, jsonrpc::kInvalidParams, cat("Unknown tool: ", call->name), b);
    }
    respond(call->id, result, b);
  });
}

std::string session::finish_result(const std::shared_ptr<call_state>& call, std::string raw) {
  rapidjson::Document doc;
  doc.Parse(raw.c_str(), raw.size());
  const rapidjson::Value* content = doc.HasParseError() ? nullptr : sdk::member(doc, "content");
  if (content == nullptr || !content->IsArray()) {
    log::warning("session", cat("tool ", call->name, " returned an invalid result: ", raw.substr(0, 200)));
    return sdk::result::error(cat("The tool ", call->name,
                                           " returned an invalid result (not an MCP CallToolResult); "
                                           "this is a bug in its plugin."))
        .to_json();
  }
  if (server_.settings().privacy.hide_home_in_paths && !server_.home().empty()) {
    policy::hide_home(doc, doc.GetAllocator(), server_.home());
  }
  return sdk::to_json(doc);
}

// ---- Resources, prompts, completion ---------------------------------------------------------

void session::resources_list(const std::string& id, const rapidjson::Value* params, bool templates,
                             const std::shared_ptr<batch>& b) {
  const std::string cursor = string_param(params, "cursor");
  run_async(id, b, [this, id, cursor, templates, b] {
    std::vector<std::pair<std::string, std::string>> items;  // uri, listing
    for (const auto& r : server_.registry().resources()) {
      if (r.is_template == templates) items.emplace_back(r.uri, r.listing);
    }
    for (const auto& p : server_.registry().providers()) {
      auto list_fn = templates ? p.desc.list_resource_templates : p.desc.list_resources;
      if (list_fn == nullptr) continue;
      sdk::string_writer out;
      list_fn(p.desc.user_data, out.raw());
      auto doc = sdk::parse_json(out.text());
      if (!doc || !doc->IsArray()) continue;
      for (const auto& item : doc->GetArray()) {
        items.emplace_back(std::string(sdk::string_member(item, templates ? "uriTemplate" : "uri").value_or("")),
                           sdk::to_json(item));
      }
    }
    auto page = paginate(items, cursor, server_.global().page_size);
    if (!page.ok()) return respond_error(id, jsonrpc::kInvalidParams, view(page.status().message()), b);
    respond(id, page_result(templates ? "resourceTemplates" : "resources", items, *page), b);
  });
}

void session::resources_read(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& b) {
  const std::string uri = string_param(params, "uri");
  if (uri.empty()) {
    respond_error(id, jsonrpc::kInvalidParams, "Invalid params: \"uri\" is required", b);
    return;
  }
  auto call = std::make_shared<call_state>();
  call->id = id;
  call->name = uri;
  run_async(id, b, [this, id, uri, call, b] {
    call_context context(shared_from_this(), call);
    auto attempt = [&](toolhost_resource_read_fn read, void* ud) -> bool {
      sdk::string_writer out;
      const toolhost_status_t s = read(ud, context.raw(), uri.c_str(), out.raw());
      if (s == TOOLHOST_ERR_NOT_FOUND) return false;
      if (s != TOOLHOST_OK) {
        respond_error(id, jsonrpc::kInternalError,
                      cat("Could not read ", uri, ": ", out.text().empty() ? "the plugin failed" : out.text()),
                      b);
        return true;
      }
      respond(id, filtered(out.take()), b);
      return true;
    };
    // Fixed URIs first, then templates, then providers.
    for (const auto& r : server_.registry().resources()) {
      if (!r.is_template && r.uri == uri && attempt(r.read, r.user_data)) return;
    }
    for (const auto& r : server_.registry().resources()) {
      if (r.is_template && uri_template_matches(r.uri, uri) && attempt(r.read, r.user_data)) return;
    }
    for (const auto& p : server_.registry().providers()) {
      if (p.desc.read_resource != nullptr && attempt(p.desc.read_resource, p.desc.user_data)) return;
    }
    respond_error(id, jsonrpc::kResourceNotFound, cat("Resource not found: ", uri), b,
                  cat(R"({"uri":)", sdk::quote(uri), "}"));
  });
}

void session::prompts_list(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& b) {
  const std::string cursor = string_param(params, "cursor");
  run_async(id, b, [this, id, cursor, b] {
    std::vector<std::pair<std::string, std::string>> items;
    for (const auto& p : server_.registry().prompts()) items.emplace_back(p.name, p.listing);
    for (const auto& p : server_.registry().providers()) {
      if (p.desc.list_prompts == nullptr) continue;
      sdk::string_writer out;
      p.desc.list_prompts(p.desc.user_data, out.raw());
      auto doc = sdk::parse_json(out.text());
      if (!doc || !doc->IsArray()) continue;
      for (const auto& item : doc->GetArray()) {
        items.emplace_back(std::string(sdk::string_member(item, "name").value_or("")), sdk::to_json(item));
      }
    }
    auto page = paginate(items, cursor, server_.global().page_size);
    if (!page.ok()) return respond_error(id, jsonrpc::kInvalidParams, view(page.status().message()), b);
    respond(id, page_result("prompts", items, *page), b);
  });
}

void session::prompts_get(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& b) {
  const std::string name = string_param(params, "name");
  if (name.empty()) {
    respond_error(id, jsonrpc::kInvalidParams, "Invalid params: \"name\" is required", b);
    return;
  }
  const rapidjson::Value* arguments = object_param(params, "arguments");
  const std::string args = arguments != nullptr ? sdk::to_json(*arguments) : "{}";
  auto call = std::make_shared<call_state>();
  call->id = id;
  call->name = name;
  run_async(id, b, [this, id, name, args, call, b] {
    call_context context(shared_from_this(), call);
    sdk::string_writer out;
    toolhost_status_t s = TOOLHOST_ERR_NOT_FOUND;
    if (const plugins::prompt* p = server_.registry().find_prompt(name)) {
      s = p->get(p->user_data, context.raw(), args.c_str(), out.raw());
    } else {
      for (const auto& pr : server_.registry().providers()) {
        if (pr.desc.get_prompt == nullptr) continue;
        s = pr.desc.get_prompt(pr.desc.user_data, context.raw(), name.c_str(), args.c_str(), out.raw());
        if (s != TOOLHOST_ERR_NOT_FOUND) break;
        out.take();
      }
    }
    if (s == TOOLHOST_OK) return respond(id, filtered(out.take()), b);
    if (s == TOOLHOST_ERR_NOT_FOUND) return respond_error(id, jsonrpc::kInvalidParams, cat("Unknown prompt: ", name), b);
    if (s == TOOLHOST_ERR_INVALID_ARGUMENT) {
      return respond_error(id, jsonrpc::kInvalidParams, out.text().empty() ? "Invalid prompt arguments" : out.text(), b);
    }
    respond_error(id, jsonrpc::kInternalError, cat("Prompt ", name, " failed: ", out.text()), b);
  });
}

void session::complete(const std::string& id, const rapidjson::Value* params, const std::shared_ptr<batch>& b) {
  const rapidjson::Value* ref = object_param(params, "ref");
  const rapidjson::Value* argument = object_param(params, "argument");
  if (ref == nullptr || argument == nullptr) {
    respond_error(id, jsonrpc::kInvalidParams, "Invalid params: \"ref\" and \"argument\" objects are required", b);
    return;
  }
  const std::string type(sdk::string_member(*ref, "type").value_or(""));
  const std::string ref_name(sdk::string_member(*ref, type == "ref/resource" ? "uri" : "name").value_or(""));
  const std::string arg_name(sdk::string_member(*argument, "name").value_or(""));
  const std::string value(sdk::string_member(*argument, "value").value_or(""));
  const rapidjson::Value* context = object_param(params, "context");
  const rapidjson::Value* context_args = context != nullptr ? object_param(context, "arguments") : nullptr;
  const std::string context_json = context_args != nullptr ? sdk::to_json(*context_args) : "{}";
  const std::string ref_json = sdk::to_json(*ref);
  run_async(id, b, [this, id, type, ref_name, arg_name, value, context_json, ref_json, b] {
    sdk::string_writer out;
    bool known = false;
    if (type == "ref/prompt") {
      if (const plugins::prompt* p = server_.registry().find_prompt(ref_name)) {
        known = true;
        if (p->complete != nullptr) p->complete(p->user_data, arg_name.c_str(), value.c_str(), context_json.c_str(), out.raw());
      }
    } else if (type == "ref/resource") {
      for (const auto& r : server_.registry().resources()) {
        if (r.uri != ref_name) continue;
        known = true;
        if (r.complete != nullptr) r.complete(r.user_data, arg_name.c_str(), value.c_str(), context_json.c_str(), out.raw());
        break;
      }
    } else {
      return respond_error(id, jsonrpc::kInvalidParams,
                           "Invalid params: ref.type must be \"ref/prompt\" or \"ref/resource\"", b);
    }
    if (!known) {
      for (const auto& p : server_.registry().providers()) {
        if (p.desc.complete != nullptr &&
            p.desc.complete(p.desc.user_data, ref_json.c_str(), arg_name.c_str(), value.c_str(), context_json.c_str(),
                            out.raw())) {
          known = true;
          break;
        }
      }
    }
    if (!known) {
      return respond_error(id, jsonrpc::kInvalidParams,
                           cat("Unknown ", type == "ref/prompt" ? "prompt" : "resource", ": ", ref_name), b);
    }
    auto doc = sdk::parse_json(out.text());
    if (!doc || !doc->IsObject()) return respond(id, R"({"completion":{"values":[],"hasMore":false}})", b);
    respond(id, cat(R"({"completion":)", out.text(), "}"), b);
  });
}

}  // namespace toolhost::mcp
