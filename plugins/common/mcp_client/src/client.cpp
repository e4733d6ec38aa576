#include <toolhost/mcp_client/client.hpp>

#include <atomic>
#include <set>

#include <toolhost/mcp_client/tool_headers.hpp>
#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp_client {

namespace sdk = toolhost::sdk;

namespace {

// The progress token of a notifications/progress as text, so that 7 and "7" stay distinct.
std::string token_key(const rapidjson::Value& token) { return sdk::to_json(token); }

}  // namespace

client_identity client::identity() const {
  return {options_.client_name, options_.client_version, options_.capabilities_json, options_.log_level};
}

client::client(client_options options, client_callbacks callbacks)
    : options_(std::move(options)), callbacks_(std::move(callbacks)) {}

client::~client() { stop(); }

bool client::running() const {
  std::lock_guard lock(mutex_);
  return conn_ != nullptr && !conn_->closed();
}

std::optional<server_info> client::info() const {
  std::lock_guard lock(mutex_);
  return info_;
}

int client::pid() const {
  std::lock_guard lock(mutex_);
  return conn_ != nullptr && !conn_->closed() ? conn_->pid() : 0;
}

absl::Status client::start() {
  std::lock_guard start_lock(start_mutex_);
  std::shared_ptr<connection> old;
  {
    std::lock_guard lock(mutex_);
    if (conn_ != nullptr && !conn_->closed()) return absl::OkStatus();
    old = std::move(conn_);
    if (old != nullptr) deliberate_.erase(old.get());
  }
  if (old != nullptr) old->close();  // reap the dead one before starting anew

  auto wire = make_transport(options_.upstream);
  if (!wire.ok()) return wire.status();
  // Set when we close the connection ourselves, so that only unexpected ends are reported.
  auto deliberate = std::make_shared<std::atomic<bool>>(false);
  auto conn = std::make_shared<connection>(
      std::move(*wire), connection_handlers{
                            [this](const message& m) { on_notification(nullptr, m); },
                            [this](const message& m) -> absl::StatusOr<std::string> {
                              if (!callbacks_.request)
                                return absl::UnimplementedError("this client does not handle " + m.method);
                              return callbacks_.request(m.method, m.params);
                            },
                            [this, deliberate](const std::string& reason) {
                              if (!deliberate->load() && callbacks_.closed) callbacks_.closed(reason);
                            },
                        });
  if (absl::Status s = conn->open(); !s.ok()) return s;
  {
    // Visible to stop() while it initializes, so that stopping never waits for a slow start.
    std::lock_guard lock(mutex_);
    starting_ = conn;
    deliberate_[conn.get()] = deliberate;
  }

  auto fail = [&](absl::Status s) {
    deliberate->store(true);
    conn->close();
    std::lock_guard lock(mutex_);
    if (starting_ == conn) starting_.reset();
    deliberate_.erase(conn.get());
    return s;
  };
  auto info = negotiate(*conn, identity(), options_.discover_timeout, options_.start_timeout);
  if (!info.ok()) {
    return fail(absl::Status(info.status().code(), "could not initialize the upstream " + options_.upstream.describe() +
                                                       ": " + std::string(info.status().message())));
  }
  if (info->modern()) listen_for_changes(*conn, *info);

  std::lock_guard lock(mutex_);
  if (annotations_ != nullptr) conn->mirror_arguments(annotations_);
  if (starting_ != conn) {  // stop() ran meanwhile
    deliberate->store(true);
    conn->close();
    return absl::CancelledError("the client was stopped while the upstream started");
  }
  starting_.reset();
  conn_ = conn;
  info_ = *std::move(info);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<connection>> client::current() {
  {
    std::lock_guard lock(mutex_);
    if (conn_ != nullptr && !conn_->closed()) return conn_;
  }
  if (absl::Status s = start(); !s.ok()) return s;
  std::lock_guard lock(mutex_);
  if (conn_ == nullptr)
    return absl::UnavailableError("the upstream " + options_.upstream.describe() + " is not running");
  return conn_;
}

void client::on_notification(const std::shared_ptr<connection>&, const message& m) {
  if (m.method == "notifications/progress") {
    auto doc = sdk::parse_json(m.params);
    if (!doc) return;
    const rapidjson::Value* token = sdk::member(*doc, "progressToken");
    const rapidjson::Value* progress = sdk::member(*doc, "progress");
    if (token == nullptr || progress == nullptr || !progress->IsNumber()) return;
    const rapidjson::Value* total = sdk::member(*doc, "total");
    const double total_value = total != nullptr && total->IsNumber() ? total->GetDouble() : -1;
    const std::string text(sdk::string_member(*doc, "message").value_or(""));
    std::lock_guard lock(progress_mutex_);
    auto it = progress_.find(token_key(*token));
    if (it != progress_.end()) it->second(progress->GetDouble(), total_value, text);
    return;
  }
  if (callbacks_.notification) callbacks_.notification(m.method, m.params);
}

absl::StatusOr<std::string> client::request(std::string_view method, std::string_view params_json,
                                            const request_options& options) {
  auto conn = current();
  if (!conn.ok()) return conn.status();

  rapidjson::Document params;
  params.Parse(params_json.data(), params_json.size());
  if (params.HasParseError() || !params.IsObject()) {
    return absl::InvalidArgumentError("the params of " + std::string(method) + " must be a JSON object");
  }
  auto& alloc = params.GetAllocator();
  rapidjson::Value meta(rapidjson::kObjectType);
  if (!options.meta_json.empty()) {
    rapidjson::Document given;
    given.Parse(options.meta_json.data(), options.meta_json.size());
    if (!given.HasParseError() && given.IsObject()) meta.CopyFrom(given, alloc);
  }
  // The caller's 2026-07-28 context (its own client's version and capabilities) is not ours.
  remove_request_meta(meta);
  // Our own token replaces the caller's: tokens must be unique among the requests in flight
  // on this connection, and several downstream sessions may share one upstream.
  meta.RemoveMember("progressToken");
  std::string token;
  if (options.progress) {
    std::lock_guard lock(progress_mutex_);
    token = "toolhost-" + std::to_string(next_token_++);
    progress_[sdk::quote(token)] = options.progress;
    meta.AddMember("progressToken", rapidjson::Value(token.c_str(), alloc), alloc);
  }
  params.RemoveMember("_meta");
  if (meta.MemberCount() != 0) params.AddMember("_meta", meta, alloc);

  const auto timeout = options.timeout.count() > 0 ? options.timeout : options_.request_timeout;
  absl::StatusOr<std::string> answer;
  if ((*conn)->protocol_version() == kModernVersion) {
    add_request_meta(params, alloc, identity());
    const std::string sent = sdk::to_json(params);
    answer = request_with_rounds(**conn, method, sent, timeout, options.cancel, options.input);
    // -32020 to a call: its Mcp-Param-* headers follow annotations the upstream no longer has
    // (its tools changed since they were listed). As the spec asks, list them again and retry once.
    if (!answer.ok() && method == "tools/call" && jsonrpc_error_code(answer.status()) == kHeaderMismatch &&
        !(options.cancel != nullptr && options.cancel->cancelled()) && list_all("tools/list", "tools").ok()) {
      answer = request_with_rounds(**conn, method, sent, timeout, options.cancel, options.input);
    }
    if (answer.ok()) answer = legacy_result(*std::move(answer));
  } else {
    answer = (*conn)->request(method, sdk::to_json(params), timeout, options.cancel);
  }
  if (!token.empty()) {
    std::lock_guard lock(progress_mutex_);
    progress_.erase(sdk::quote(token));
  }
  return answer;
}

void client::listen_for_changes(connection& conn, const server_info& info) {
  auto caps = sdk::parse_json(info.capabilities);
  if (!caps) return;
  auto announces = [&](const char* what) {
    const rapidjson::Value* c = sdk::member(*caps, what);
    const rapidjson::Value* flag = c != nullptr ? sdk::member(*c, "listChanged") : nullptr;
    return flag != nullptr && flag->IsBool() && flag->GetBool();
  };
  std::string filter;
  if (announces("tools")) filter += R"("toolsListChanged":true,)";
  if (announces("resources")) filter += R"("resourcesListChanged":true,)";
  if (announces("prompts")) filter += R"("promptsListChanged":true,)";
  if (filter.empty()) return;
  filter.pop_back();
  rapidjson::Document params;
  params.Parse(("{\"notifications\":{" + filter + "}}").c_str());
  add_request_meta(params, params.GetAllocator(), identity());
  // Open as long as the connection is: its notifications arrive as any others do (on_notification),
  // and it ends with the connection, so nobody waits for its answer.
  (void)conn.send_request("subscriptions/listen", sdk::to_json(params));
}

absl::StatusOr<std::vector<std::string>> client::list_all(std::string_view method, std::string_view key) {
  std::vector<std::string> items;
  std::string cursor;
  std::set<std::string> seen;
  for (int page = 0; page < 10000; ++page) {
    const std::string params = cursor.empty() ? "{}" : R"({"cursor":)" + sdk::quote(cursor) + "}";
    auto answer = request(method, params);
    if (!answer.ok()) return answer.status();
    auto doc = sdk::parse_json(*answer);
    if (!doc || !doc->IsObject()) {
      return absl::InternalError("the upstream answered " + std::string(method) +
                                 " with something that is not an object");
    }
    const rapidjson::Value* list = sdk::member(*doc, key);
    if (list == nullptr || !list->IsArray()) {
      return absl::InternalError("the upstream's " + std::string(method) + " answer has no '" + std::string(key) +
                                 "' array");
    }
    for (const auto& item : list->GetArray()) items.push_back(sdk::to_json(item));
    auto next = sdk::string_member(*doc, "nextCursor");
    if (!next || next->empty()) return method == "tools/list" ? remember_annotations(std::move(items)) : items;
    cursor = std::string(*next);
    if (!seen.insert(cursor).second) {
      return absl::InternalError("the upstream's " + std::string(method) + " pagination repeats a cursor");
    }
  }
  return absl::InternalError("the upstream's " + std::string(method) + " has more than 10000 pages");
}

std::vector<std::string> client::remember_annotations(std::vector<std::string> tools) {
  std::shared_ptr<connection> conn;
  {
    std::lock_guard lock(mutex_);
    conn = conn_;
  }
  // Only a 2026-07-28 POST has headers that mirror its body.
  if (options_.upstream.url.empty() || conn == nullptr || conn->protocol_version() != kModernVersion) return tools;
  read_tools read = read_tool_annotations(std::move(tools));
  if (callbacks_.warning) {
    for (const std::string& why : read.refused) callbacks_.warning(why);
  }
  auto annotations = std::make_shared<const tool_annotations>(std::move(read.annotations));
  {
    std::lock_guard lock(mutex_);
    annotations_ = annotations;
  }
  conn->mirror_arguments(std::move(annotations));
  return std::move(read.kept);
}

void client::stop() {
  std::shared_ptr<connection> conns[2];
  {
    std::lock_guard lock(mutex_);
    conns[0] = std::move(conn_);
    conns[1] = std::move(starting_);
    for (auto& c : conns) {
      if (c == nullptr) continue;
      if (auto it = deliberate_.find(c.get()); it != deliberate_.end()) {
        it->second->store(true);
        deliberate_.erase(it);
      }
    }
  }
  for (auto& c : conns) {
    if (c != nullptr) c->close();
  }
}

}  // namespace toolhost::mcp_client
