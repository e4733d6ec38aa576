#include "proxy.hpp"

#include <algorithm>
#include <cstdint>

#include <absl/strings/cord.h>

#include <toolhost/mcp_client/connection.hpp>
#include <toolhost/sdk/call.hpp>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/writer.hpp>

#include "permissions.hpp"

namespace toolhost::rea_filter {

namespace sdk = toolhost::sdk;
namespace mcp = toolhost::mcp_client;

namespace {

constexpr uint32_t kAllLists = TOOLHOST_LIST_TOOLS | TOOLHOST_LIST_RESOURCES | TOOLHOST_LIST_PROMPTS;

// What we offer the upstream: its requests to ask the person or the model go to the client.
constexpr const char* kUpstreamCapabilities = R"({"elicitation":{"form":{}},"sampling":{}})";

// The host's name for the key of a question in a 2026-07-28 round (host/mcp/input_required.hpp).
constexpr const char* kInputKeyMember = "io.toolhost/inputKey";

// What the plugin ABI's client_request passes on.
bool is_client_question(std::string_view method) {
  return method == "elicitation/create" || method == "sampling/createMessage" || method == "roots/list";
}

bool valid_tool_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

toolhost_log_level_t level_from(std::string_view name) {
  static constexpr std::pair<std::string_view, toolhost_log_level_t> kLevels[] = {
      {"debug", TOOLHOST_LOG_DEBUG},     {"info", TOOLHOST_LOG_INFO},          {"notice", TOOLHOST_LOG_NOTICE},
      {"warning", TOOLHOST_LOG_WARNING}, {"error", TOOLHOST_LOG_ERROR},        {"critical", TOOLHOST_LOG_CRITICAL},
      {"alert", TOOLHOST_LOG_ALERT},     {"emergency", TOOLHOST_LOG_EMERGENCY}};
  for (const auto& [n, l] : kLevels) {
    if (n == name) return l;
  }
  return TOOLHOST_LOG_INFO;
}

std::string join_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ',';
    out += items[i];
  }
  return out + "]";
}

bool has_capability(const std::optional<mcp::server_info>& info, std::string_view name) {
  if (!info) return false;
  auto caps = sdk::parse_json(info->capabilities);
  return caps && sdk::member(*caps, name) != nullptr;
}

absl::Status with_error_object(absl::Status status, std::string error_json) {
  status.SetPayload(mcp::kJsonRpcErrorPayload, absl::Cord(std::move(error_json)));
  return status;
}

// A 2026-07-28 upstream is asked for its log messages at info, the level a 2025 server sends
// before logging/setLevel, which the proxy never sends: each client of the host gets them at
// its own level either way.
mcp::client_options upstream_options(const proxy_settings& settings) {
  mcp::client_options o;
  o.upstream = settings.upstream;
  o.client_name = "toolhost-rea-filter";
  o.client_version = "0.1.0";
  o.capabilities_json = kUpstreamCapabilities;
  o.log_level = "info";
  o.start_timeout = settings.start_timeout;
  o.request_timeout = std::chrono::milliseconds(60000);
  return o;
}

}  // namespace

proxy::proxy(proxy_settings settings, host_hooks hooks)
    : settings_(std::move(settings)),
      hooks_(std::move(hooks)),
      client_(upstream_options(settings_),
              mcp::client_callbacks{
                  [this](const std::string& method, const std::string& params) { on_notification(method, params); },
                  [this](const std::string& method, const std::string& params) { return on_request(method, params); },
                  [this](const std::string& reason) {
                    if (hooks_.host_log)
                      hooks_.host_log(TOOLHOST_LOG_WARNING, reason + "; it starts again on the next call");
                  },
                  [this](const std::string& message) {
                    if (hooks_.host_log) hooks_.host_log(TOOLHOST_LOG_WARNING, message);
                  },
              }) {
  refresher_ = std::thread([this] { refresher_loop(); });
}

proxy::~proxy() { shutdown(); }

void proxy::start_in_background() {
  starter_ = std::thread([this] {
    ensure_loaded();
    if (hooks_.instructions_known) hooks_.instructions_known();
  });
}

void proxy::shutdown() {
  {
    std::lock_guard lock(refresh_mutex_);
    if (stopping_ && !refresher_.joinable() && !starter_.joinable()) return;
    stopping_ = true;
  }
  refresh_wanted_.notify_all();
  client_.stop();  // also ends a start in progress, so the joins below do not wait for it
  if (starter_.joinable()) starter_.join();
  if (refresher_.joinable()) refresher_.join();
  client_.stop();
}

void proxy::ensure_loaded() {
  std::lock_guard lock(load_mutex_);
  if (loaded_) return;
  {
    std::lock_guard stop_lock(refresh_mutex_);
    if (stopping_) return;
  }
  absl::Status s = client_.start();
  if (s.ok()) s = refresh(kAllLists);
  {
    std::lock_guard cache_lock(cache_mutex_);
    start_error_ = s.ok() ? std::string() : std::string(s.message());
  }
  if (!s.ok()) {
    if (hooks_.host_log) hooks_.host_log(TOOLHOST_LOG_ERROR, std::string(s.message()));
    return;
  }
  if (auto info = client_.info(); info && hooks_.host_log) {
    hooks_.host_log(TOOLHOST_LOG_INFO, "the upstream " + settings_.upstream.describe() + " speaks MCP " +
                                           info->protocol_version + " (" + info->chosen_because + ")");
  }
  loaded_ = true;
}

absl::Status proxy::start_and_check() {
  ensure_loaded();
  std::lock_guard lock(cache_mutex_);
  if (start_error_.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(start_error_);
}

std::string proxy::start_failure() const {
  std::lock_guard lock(cache_mutex_);
  if (start_error_.empty()) return {};
  return "The MCP server that this server passes on is not running: " + start_error_ +
         ". Its tools are missing until it starts; each tool call tries again. Tell the user: toolhost check-config "
         "names the problem.";
}

absl::Status proxy::refresh(uint32_t mask) {
  const auto info = client_.info();
  if ((mask & TOOLHOST_LIST_TOOLS) != 0 && has_capability(info, "tools")) {
    auto items = client_.list_all("tools/list", "tools");
    if (!items.ok()) return items.status();
    std::vector<std::string> passed;
    std::set<std::string> names;
    for (const std::string& text : *items) {
      auto tool = sdk::parse_json(text);
      if (!tool || !tool->IsObject()) continue;
      const std::string name(sdk::string_member(*tool, "name").value_or(""));
      if (settings_.filter.denies(name)) continue;
      if (!valid_tool_name(name)) {
        if (hooks_.host_log)
          hooks_.host_log(TOOLHOST_LOG_WARNING, "skipping the upstream tool '" + name + "': not a valid MCP tool name");
        continue;
      }
      const bool read_only = is_read_only(name, sdk::member(*tool, "annotations"));
      tool->RemoveMember("x-toolhost-permission");
      tool->AddMember("x-toolhost-permission", rapidjson::StringRef(read_only ? kReadKind : kRunKind),
                      tool->GetAllocator());
      // A proxied call may take long (a 30-minute analysis): clients with tasks may run it as one.
      tool->RemoveMember("x-toolhost-tasks");
      tool->AddMember("x-toolhost-tasks", "optional", tool->GetAllocator());
      passed.push_back(sdk::to_json(*tool));
      names.insert(name);
    }
    std::lock_guard lock(cache_mutex_);
    tools_json_ = join_array(passed);
    tool_names_ = std::move(names);
  }
  if ((mask & TOOLHOST_LIST_RESOURCES) != 0 && has_capability(info, "resources")) {
    auto resources = client_.list_all("resources/list", "resources");
    if (!resources.ok()) return resources.status();
    auto templates = client_.list_all("resources/templates/list", "resourceTemplates");
    if (!templates.ok()) return templates.status();
    std::lock_guard lock(cache_mutex_);
    resources_json_ = join_array(*resources);
    templates_json_ = join_array(*templates);
  }
  if ((mask & TOOLHOST_LIST_PROMPTS) != 0 && has_capability(info, "prompts")) {
    auto prompts = client_.list_all("prompts/list", "prompts");
    if (!prompts.ok()) return prompts.status();
    std::lock_guard lock(cache_mutex_);
    prompts_json_ = join_array(*prompts);
  }
  return absl::OkStatus();
}

void proxy::refresher_loop() {
  for (;;) {
    uint32_t mask = 0;
    {
      std::unique_lock lock(refresh_mutex_);
      refresh_wanted_.wait(lock, [this] { return stopping_ || refresh_mask_ != 0; });
      if (stopping_) return;
      mask = refresh_mask_;
      refresh_mask_ = 0;
    }
    // Re-read and re-filter first, then tell the clients, so that the list they fetch in
    // answer already is the new one.
    absl::Status s = refresh(mask);
    if (!s.ok() && hooks_.host_log) {
      hooks_.host_log(TOOLHOST_LOG_WARNING, "could not re-read the upstream's lists: " + std::string(s.message()));
    }
    if (hooks_.list_changed) hooks_.list_changed(mask);
  }
}

void proxy::on_notification(const std::string& method, const std::string& params) {
  uint32_t mask = 0;
  if (method == "notifications/tools/list_changed") mask = TOOLHOST_LIST_TOOLS;
  if (method == "notifications/resources/list_changed") mask = TOOLHOST_LIST_RESOURCES;
  if (method == "notifications/prompts/list_changed") mask = TOOLHOST_LIST_PROMPTS;
  if (mask != 0) {
    {
      std::lock_guard lock(refresh_mutex_);
      refresh_mask_ |= mask;
    }
    refresh_wanted_.notify_all();
    return;
  }
  auto doc = sdk::parse_json(params);
  if (!doc) return;
  if (method == "notifications/message") {
    const rapidjson::Value* data = sdk::member(*doc, "data");
    const std::string level(sdk::string_member(*doc, "level").value_or("info"));
    const auto logger = sdk::string_member(*doc, "logger");
    const std::string logger_text(logger.value_or(""));
    if (hooks_.client_log) {
      hooks_.client_log(level_from(level), logger ? logger_text.c_str() : nullptr,
                        data != nullptr ? sdk::to_json(*data) : "null");
    }
    return;
  }
  if (method == "notifications/resources/updated") {
    if (auto uri = sdk::string_member(*doc, "uri"); uri && hooks_.resource_updated) {
      hooks_.resource_updated(std::string(*uri));
    }
  }
}

absl::StatusOr<std::string> proxy::on_request(const std::string& method, const std::string& params) {
  if (!is_client_question(method)) {
    return absl::UnimplementedError("toolhost's rea-filter does not handle " + method);
  }
  // The upstream asks while one of our calls runs (that is what makes it ask); over stdio it
  // cannot say which, so the newest call carries the question to its client.
  active_call* borrowed = nullptr;
  {
    std::lock_guard lock(calls_mutex_);
    if (!calls_.empty()) {
      borrowed = &calls_.back();
      ++borrowed->borrowed;
    }
  }
  if (borrowed == nullptr) {
    return absl::FailedPreconditionError("no tool call is running through which toolhost could pass " + method +
                                         " on to the client");
  }
  auto answer = ask_client(borrowed->call, method, params);
  {
    std::lock_guard lock(calls_mutex_);
    --borrowed->borrowed;
  }
  calls_changed_.notify_all();
  return answer;
}

absl::StatusOr<std::string> proxy::ask_client(const toolhost_call_t* call, const std::string& method,
                                              const std::string& params) {
  sdk::string_writer out;
  // Bounded like the call itself: should the upstream die while the person thinks, the call
  // that carries the question must still end.
  const auto limit = std::min<int64_t>(settings_.timeout.count(), UINT32_MAX);
  const toolhost_status_t s =
      call->client_request(call, method.c_str(), params.c_str(), static_cast<uint32_t>(limit), out.raw());
  if (s == TOOLHOST_OK) return out.take();
  const std::string answer = out.take();
  absl::Status status = sdk::status_from(s, sdk::client_request_failure(s, method, answer));
  // The upstream gets a JSON-RPC error object as the client would have sent it.
  if (s == TOOLHOST_ERR_REMOTE) return with_error_object(std::move(status), answer);
  if (s == TOOLHOST_ERR_UNSUPPORTED) {
    return with_error_object(std::move(status),
                             R"({"code":-32601,"message":)" +
                                 sdk::quote("The client connected to toolhost does not support " + method) + "}");
  }
  return status;
}

mcp::input_fn proxy::input_for(const toolhost_call_t* call) {
  // The host in front keys a 2026-07-28 client's questions: the upstream's keys, prefixed so that
  // they never meet the host's own (its approval of this very call is "toolhost_approval" too),
  // keep each question's answer with it across the client's rounds, in which the upstream is
  // called afresh and asks again under the same keys.
  const bool front_is_modern = call->protocol_version != nullptr && call->protocol_version == mcp::kModernVersion;
  return [this, call, front_is_modern](const mcp::input_request& q) -> absl::StatusOr<std::string> {
    if (!is_client_question(q.method)) {
      return absl::UnimplementedError("the upstream asks for " + q.method + ", which toolhost cannot pass on");
    }
    if (!front_is_modern) return ask_client(call, q.method, q.params);
    auto params = sdk::parse_json(q.params);
    if (!params || !params->IsObject()) return ask_client(call, q.method, q.params);
    auto& a = params->GetAllocator();
    if (!params->HasMember("_meta") || !(*params)["_meta"].IsObject()) {
      params->RemoveMember("_meta");
      params->AddMember("_meta", rapidjson::Value(rapidjson::kObjectType), a);
    }
    (*params)["_meta"].RemoveMember(kInputKeyMember);
    (*params)["_meta"].AddMember(rapidjson::StringRef(kInputKeyMember),
                                 rapidjson::Value(("upstream." + q.key).c_str(), a), a);
    return ask_client(call, q.method, sdk::to_json(*params));
  };
}

std::string proxy::upstream_error_text(std::string_view tool, const absl::Status& status) const {
  const std::string name(tool);
  switch (status.code()) {
    case absl::StatusCode::kCancelled: return name + " was cancelled.";
    case absl::StatusCode::kUnavailable:
      return name + " failed because " + std::string(status.message()) +
             ". The upstream starts again on the next call.";
    case absl::StatusCode::kDeadlineExceeded:
      return name + " did not finish within " + std::to_string(settings_.timeout.count()) +
             " ms; it was cancelled. Raise timeout_ms in the rea-filter settings for longer calls.";
    default: break;
  }
  if (mcp::jsonrpc_error(status)) return "The upstream refused " + name + ": " + std::string(status.message());
  return name + " failed: " + std::string(status.message());
}

bool proxy::call_tool(const toolhost_call_t* call, std::string_view name, std::string_view arguments,
                      std::string* result) {
  if (auto refusal = settings_.filter.refusal(name)) {
    *result = sdk::result::error(*refusal).to_json();
    return true;
  }
  auto known = [&] {
    std::lock_guard lock(cache_mutex_);
    return tool_names_.count(std::string(name)) != 0;
  };
  if (!known()) {
    ensure_loaded();
    if (!known()) {
      // While the upstream is down every name may be one of its tools: say why there are none.
      const std::string failure = start_failure();
      if (failure.empty()) return false;
      *result = sdk::result::error(failure).to_json();
      return true;
    }
  }

  sdk::call context(call);
  auto cancel = std::make_shared<mcp::cancel_flag>();
  context.on_cancel([cancel] { cancel->cancel("The client cancelled the call."); });
  mcp::request_options options;
  options.timeout = settings_.timeout;
  options.meta_json = call->meta_json != nullptr ? call->meta_json : "";
  options.cancel = cancel;
  options.input = input_for(call);
  if (options.meta_json.find("progressToken") != std::string::npos) {
    auto meta = sdk::parse_json(options.meta_json);
    if (meta && sdk::member(*meta, "progressToken") != nullptr) {
      options.progress = [call](double progress, double total, const std::string& message) {
        call->progress(call, progress, total, message.empty() ? nullptr : message.c_str());
      };
    }
  }

  std::list<active_call>::iterator me;
  {
    std::lock_guard lock(calls_mutex_);
    me = calls_.insert(calls_.end(), active_call{call});
  }
  const bool restarts = !client_.running();
  const std::string params = std::string(R"({"name":)") + sdk::quote(name) + R"(,"arguments":)" +
                             std::string(arguments.empty() ? std::string_view("{}") : arguments) + "}";
  auto answer = client_.request("tools/call", params, options);
  {
    // A question the upstream asked through this call may still be on its way to the client.
    std::unique_lock lock(calls_mutex_);
    calls_changed_.wait(lock, [&] { return me->borrowed == 0; });
    calls_.erase(me);
  }
  if (restarts) {
    // A new upstream process may offer other tools than the one that died.
    {
      std::lock_guard lock(refresh_mutex_);
      refresh_mask_ |= kAllLists;
    }
    refresh_wanted_.notify_all();
  }
  if (!answer.ok()) {
    *result = sdk::result::error(upstream_error_text(name, answer.status())).to_json();
    return true;
  }
  *result = std::move(*answer);
  return true;
}

toolhost_status_t proxy::read_resource(const toolhost_call_t* call, std::string_view uri, std::string* result) {
  ensure_loaded();
  mcp::request_options options;
  if (call != nullptr) options.input = input_for(call);
  auto answer = client_.request("resources/read", std::string(R"({"uri":)") + sdk::quote(uri) + "}", options);
  if (answer.ok()) {
    *result = std::move(*answer);
    return TOOLHOST_OK;
  }
  *result = std::string(answer.status().message());
  // A missing resource is -32002 up to 2025-11-25 and -32602 in 2026-07-28; the host in front
  // says it in its own client's era.
  const int64_t code = mcp::jsonrpc_error_code(answer.status());
  const auto info = client_.info();
  if (code == -32002 || (code == -32602 && info && info->modern())) return TOOLHOST_ERR_NOT_FOUND;
  return TOOLHOST_ERR_INTERNAL;
}

toolhost_status_t proxy::get_prompt(const toolhost_call_t* call, std::string_view name, std::string_view arguments,
                                    std::string* result) {
  ensure_loaded();
  mcp::request_options options;
  if (call != nullptr) options.input = input_for(call);
  const std::string params = std::string(R"({"name":)") + sdk::quote(name) + R"(,"arguments":)" +
                             std::string(arguments.empty() ? std::string_view("{}") : arguments) + "}";
  auto answer = client_.request("prompts/get", params, options);
  if (answer.ok()) {
    *result = std::move(*answer);
    return TOOLHOST_OK;
  }
  *result = std::string(answer.status().message());
  if (mcp::jsonrpc_error_code(answer.status()) == -32602) return TOOLHOST_ERR_INVALID_ARGUMENT;
  return TOOLHOST_ERR_INTERNAL;
}

bool proxy::complete(std::string_view ref_json, std::string_view argument, std::string_view value,
                     std::string_view context_json, std::string* result) {
  ensure_loaded();
  if (!has_capability(client_.info(), "completions")) return false;
  const std::string params = std::string(R"({"ref":)") + std::string(ref_json) + R"(,"argument":{"name":)" +
                             sdk::quote(argument) + R"(,"value":)" + sdk::quote(value) +
                             R"(},"context":{"arguments":)" +
                             std::string(context_json.empty() ? std::string_view("{}") : context_json) + "}}";
  auto answer = client_.request("completion/complete", params);
  if (!answer.ok()) return false;
  auto doc = sdk::parse_json(*answer);
  const rapidjson::Value* completion = doc ? sdk::member(*doc, "completion") : nullptr;
  if (completion == nullptr) return false;
  *result = sdk::to_json(*completion);
  return true;
}

std::string proxy::list_tools() {
  ensure_loaded();
  std::lock_guard lock(cache_mutex_);
  return tools_json_;
}

std::string proxy::list_resources() {
  ensure_loaded();
  std::lock_guard lock(cache_mutex_);
  return resources_json_;
}

std::string proxy::list_resource_templates() {
  ensure_loaded();
  std::lock_guard lock(cache_mutex_);
  return templates_json_;
}

std::string proxy::list_prompts() {
  ensure_loaded();
  std::lock_guard lock(cache_mutex_);
  return prompts_json_;
}

std::string proxy::instructions() {
  // Never blocks (plugin.h): until the first start ends there are none; the host waits for
  // hooks.instructions_known, up to instructions_wait_ms, before it asks.
  auto info = client_.info();
  if (info) return info->instructions;
  return start_failure();
}

}  // namespace toolhost::rea_filter
