// The 2026-07-28 era: every request carries its own context in params._meta (protocol version,
// client capabilities, log level), nothing is inferred from earlier requests, and results say
// what they are (resultType), who answered (_meta serverInfo) and how long they keep (ttlMs,
// cacheScope). The handlers are the stateful era's; what differs is checked here on the way in
// and added here on the way out. subscriptions/listen replaces the GET stream and
// resources/subscribe: a request that stays open and carries the list changes it asked for.
#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <set>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/param_headers.hpp>

#include "host/log.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/mcp/session_params.hpp"

namespace toolhost::mcp {
namespace {

constexpr std::string_view kMetaSubscription = "io.modelcontextprotocol/subscriptionId";

constexpr size_t kMaxListeners = 16;  // open subscriptions/listen requests per session

// Results a client may keep: lists and reads. ttlMs 0 (revalidate each time) because providers
// and plugins change them at run time; private because permissions and privacy settings shape
// them for this host's user.
bool cacheable(std::string_view method) {
  return method == "tools/list" || method == "prompts/list" || method == "resources/list" ||
         method == "resources/templates/list" || method == "resources/read" || method == "server/discover";
}

// The stateless versions as JSON strings, comma-separated: server/discover's supportedVersions and
// -32022's data.supported.
std::string quoted_stateless_versions() {
  std::string out;
  for (std::string_view v : kStatelessVersions) append(out, out.empty() ? "" : ",", sdk::quote(v));
  return out;
}

std::string short_text(std::string_view s) { return s.size() > 100 ? cat(s.substr(0, 100), "...") : std::string(s); }

// The name a request's Mcp-Name header must repeat (a view into `params`).
std::string_view named_in(std::string_view method, const rapidjson::Value* params) {
  std::string_view key;
  if (method == "tools/call" || method == "prompts/get") key = "name";
  if (method == "resources/read") key = "uri";
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") key = "taskId";
  if (key.empty() || params == nullptr) return {};
  const rapidjson::Value* v = sdk::member(*params, key);
  return v != nullptr && v->IsString() ? sdk::as_view(*v) : std::string_view();
}

// Whether `text` contains `word`, looked for by its part from `rare` on, which begins with a byte
// that JSON text seldom holds: string_view::find runs memchr on that byte and compares at each hit.
// A search from the key's opening quote stops at every member (31 memchr calls per echo answer),
// and memmem cost 250 instructions per search there (callgrind, bench/mcp).
bool mentions(std::string_view text, std::string_view word, size_t rare) {
  const std::string_view tail = word.substr(rare);
  for (size_t at = text.find(tail, rare); at != std::string_view::npos; at = text.find(tail, at + 1)) {
    if (text.compare(at - rare, word.size(), word) == 0) return true;
  }
  return false;
}

// Whether `result` has a resultType of its own: toolhost's typed results begin with it; one that
// only names it somewhere (a task's inlined result, a tool's text) is looked at properly.
bool has_result_type(std::string_view result) {
  if (result.rfind(R"({"resultType":)", 0) == 0) return true;
  if (!mentions(result, R"("resultType")", 7)) return false;  // from "Type"
  rapidjson::Document doc;
  doc.Parse(result.data(), result.size());
  return !doc.HasParseError() && doc.IsObject() && doc.HasMember("resultType");
}

// The Mcp-Name header as the client meant it equals `name`. Most names are plain ASCII, compared
// as they came; only an encoded one is decoded (param_headers::decode checks the characters too).
absl::Status name_header_mismatch(std::string_view header, std::string_view name) {
  std::string decoded_storage;
  std::string_view decoded = header;
  if (header.rfind("=?", 0) == 0 || std::any_of(header.begin(), header.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7E;
      })) {
    auto d = sdk::param_headers::decode(header);
    if (!d.ok()) return absl::InvalidArgumentError(cat("the Mcp-Name header is unacceptable: ", d.status().message()));
    decoded_storage = *std::move(d);
    decoded = decoded_storage;
  }
  if (decoded == name) return absl::OkStatus();
  return absl::InvalidArgumentError(
      cat("the Mcp-Name header is '", short_text(decoded), "' but the body names '", short_text(name), "'"));
}

}  // namespace

struct session::listener {
  request_ptr request;
  bool tools = false;
  bool prompts = false;
  bool resources = false;
  std::set<std::string> uris;
  std::vector<std::pair<std::shared_ptr<task>, uint64_t>> tasks;  // watched for notifications/tasks

  ~listener() {
    for (const auto& [t, id] : tasks) t->unwatch(id);
  }
};

// The most frequent first: a lookup scans the table.
const session::method* session::stateless_method(std::string_view name) {
  static constexpr method kTable[] = {
      {"tools/call", &session::tools_call, false},
      {"tools/list", &session::tools_list, false},
      {"server/discover", &session::discover, false},
      {"resources/list", &session::resources_list, false},
      {"resources/templates/list", &session::resource_templates_list, false},
      {"resources/read", &session::resources_read, false},
      {"prompts/list", &session::prompts_list, false},
      {"prompts/get", &session::prompts_get, false},
      {"completion/complete", &session::complete, false},
      {"subscriptions/listen", &session::subscriptions_listen, false},
      // The io.modelcontextprotocol/tasks extension (session_tasks.cpp).
      {"tasks/get", &session::tasks_get, false},
      {"tasks/update", &session::tasks_update, false},
      {"tasks/cancel", &session::tasks_cancel, false},
  };
  return find_method(kTable, name);
}

bool session::is_stateless(const rapidjson::Value* meta, const request_headers& headers) {
  if (meta != nullptr && sdk::member(*meta, kMetaVersion)) return true;
  return headers.present && !headers.protocol_version.empty() && !listed(kSupportedVersions, headers.protocol_version);
}

void session::handle_stateless(const std::shared_ptr<request_context>& request, const rapidjson::Value* params,
                               const rapidjson::Value* meta, const request_headers& headers) {
  request->stateless = true;
  // The request's context, in one pass over _meta (the first of a repeated key counts, as with
  // FindMember).
  const rapidjson::Value* version = nullptr;
  const rapidjson::Value* capabilities = nullptr;
  const rapidjson::Value* level = nullptr;
  if (meta != nullptr) {
    for (const auto& m : meta->GetObject()) {
      const std::string_view key = sdk::as_view(m.name);
      const rapidjson::Value** slot = key == kMetaVersion        ? &version
                                      : key == kMetaCapabilities ? &capabilities
                                      : key == kMetaLogLevel     ? &level
                                                                 : nullptr;
      if (slot != nullptr && *slot == nullptr) *slot = &m.value;
    }
  }
  if (version == nullptr || !version->IsString() || capabilities == nullptr || !capabilities->IsObject()) {
    return respond_error(request, jsonrpc::kInvalidParams,
                         cat("Invalid params: a 2026-07-28 request carries params._meta with \"", kMetaVersion,
                             "\" (a string) and \"", kMetaCapabilities, "\" (an object); ",
                             meta == nullptr ? "this one has no _meta" : "this one's _meta lacks one of them"),
                         {}, 400);
  }
  const std::string_view requested = sdk::as_view(*version);
  if (headers.present) {
    std::string mismatch;
    const std::string_view name = named_in(request->method, params);
    if (headers.protocol_version != requested) {
      mismatch = cat("the MCP-Protocol-Version header is '", short_text(headers.protocol_version),
                     "' but _meta names '", short_text(requested), "'");
    } else if (headers.method.empty()) {
      mismatch = cat("the Mcp-Method header is missing (the body's method is '", short_text(request->method), "')");
    } else if (headers.method != request->method) {
      mismatch = cat("the Mcp-Method header is '", short_text(headers.method), "' but the body's method is '",
                     short_text(request->method), "'");
    } else if (headers.name.empty() && !name.empty()) {
      mismatch = cat("the Mcp-Name header is missing (the body names '", short_text(name), "')");
    } else if (auto named = name_header_mismatch(headers.name, name); !named.ok()) {
      mismatch = std::string(named.message());
    }
    if (!mismatch.empty()) {
      return respond_error(request, jsonrpc::kHeaderMismatch,
                           cat("Header mismatch: ", mismatch, "; send the same value in both"), {}, 400);
    }
  }
  if (!listed(kStatelessVersions, requested)) {
    return respond_error(request, jsonrpc::kUnsupportedVersion,
                         cat("Unsupported protocol version '", short_text(requested), "': this server speaks ",
                             kStatelessVersions[0], " per request, and 2025-11-25 and older through initialize"),
                         cat(R"({"supported":[)", quoted_stateless_versions(), R"(],"requested":)", sdk::quote(requested), "}"), 400);
  }
  request->version = requested;
  if (headers.present) {  // compared with the tool's x-mcp-header arguments once its schema is at hand
    request->http = true;
    for (const auto& [param, value] : headers.params) request->param_headers.emplace_back(param, value);
  }
  // Most clients declare nothing; "{}" is already there.
  if (!capabilities->ObjectEmpty()) request->client_capabilities = sdk::to_json(*capabilities);
  const rapidjson::Value* extensions = sdk::member(*capabilities, "extensions");
  request->declares_tasks =
      extensions != nullptr && extensions->IsObject() && sdk::member(*extensions, kTasksExtension) != nullptr;
  if (level != nullptr && level->IsString()) request->log_level = log_level_index(sdk::as_view(*level));
  const method* m = stateless_method(request->method);
  if (m == nullptr) {
    const bool removed = stateful_method(request->method) != nullptr;
    return respond_error(request, jsonrpc::kMethodNotFound,
                         removed ? cat("Method not found: ", request->method, " is not part of MCP ", requested,
                                       " (it belongs to the initialize-based revisions)")
                                 : cat("Method not found: ", short_text(request->method)),
                         {}, 404);
  }
  (this->*m->run)(request, params);
}

std::string session::capabilities_json() const {
  return R"({"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},)"
         R"("prompts":{"listChanged":true},"logging":{},"completions":{},)"
         R"("extensions":{"io.modelcontextprotocol/tasks":{}}})";
}

void session::discover(const request_ptr& request, const rapidjson::Value*) {
  server_.wait_ready(std::chrono::milliseconds(1000));  // instructions come from the plugins
  std::string result = cat(R"({"supportedVersions":[)", quoted_stateless_versions(), R"(],"capabilities":)", capabilities_json());
  if (server_.ready()) {
    const std::string instructions = server_.instructions();
    if (!instructions.empty()) append(result, R"(,"instructions":)", sdk::quote(instructions));
  }
  result += '}';
  respond(request, result);
}

std::string session::stateless_result(const request_context& request, std::string_view result) const {
  std::string out;
  append_stateless_result(out, request, result);
  return out;
}

// Built in one pass into the answer's message (session::respond): a call's answer is this and
// the JSON-RPC envelope, and building it in pieces cost a 2026-07-28 call several allocations and
// copies a 2025-11-25 one did not pay (bench/mcp).
void session::append_stateless_result(std::string& out, const request_context& request, std::string_view result) const {
  std::string merged;  // a result with a _meta of its own, with serverInfo added to it
  const bool own_meta = mentions(result, R"("_meta")", 1);  // from "_meta"
  if (own_meta) {
    // The result has a _meta of its own (or the word in its content): merge properly.
    rapidjson::Document doc;
    doc.Parse(result.data(), result.size());
    if (!doc.HasParseError() && doc.IsObject()) {
      auto& a = doc.GetAllocator();
      rapidjson::Value* meta = nullptr;
      if (auto it = doc.FindMember("_meta"); it != doc.MemberEnd() && it->value.IsObject()) meta = &it->value;
      if (meta == nullptr) {
        doc.RemoveMember("_meta");
        doc.AddMember("_meta", rapidjson::Value(rapidjson::kObjectType), a);
        meta = &doc["_meta"];
      }
      if (!meta->HasMember("io.modelcontextprotocol/serverInfo")) {
        rapidjson::Document server_info;
        server_info.Parse(server_info_json_.c_str(), server_info_json_.size());
        meta->AddMember("io.modelcontextprotocol/serverInfo", rapidjson::Value(server_info, a), a);
      }
      merged = sdk::to_json(doc);
      result = merged;
    }
  }
  if (result.size() < 2 || result.front() != '{') {
    out += result;
    return;
  }
  const bool has_type = has_result_type(result);
  const bool cache = cacheable(request.method);
  const bool meta = !own_meta;
  out.reserve(out.size() + result.size() + 64 + (meta ? server_info_meta_.size() : 0));
  out += '{';
  bool first = true;
  const auto field = [&](std::string_view text) {
    if (!first) out += ',';
    out += text;
    first = false;
  };
  if (!has_type) field(R"("resultType":"complete")");
  if (cache) field(R"("ttlMs":0,"cacheScope":"private")");
  if (meta) field(server_info_meta_);
  const std::string_view rest = result.substr(1);  // the result's own members and its '}'
  const size_t next = rest.find_first_not_of(" \t\r\n");
  if (!first && next != std::string_view::npos && rest[next] != '}') out += ',';
  out += rest;
}

// ---- subscriptions/listen -----------------------------------------------------------------------

void session::subscriptions_listen(const request_ptr& request, const rapidjson::Value* params) {
  const rapidjson::Value* filter = object_param(params, "notifications");
  if (filter == nullptr) {
    return respond_error(request, jsonrpc::kInvalidParams,
                         "Invalid params: \"notifications\" (the list changes and resources to listen to) is required");
  }
  auto l = std::make_shared<listener>();
  l->request = request;
  std::vector<std::shared_ptr<task>> tasks;
  if (const rapidjson::Value* ids = sdk::member(*filter, "taskIds")) {
    if (!tasks_to_watch(request, *ids, tasks)) return;
  }
  auto flag = [filter](const char* name) {
    const rapidjson::Value* v = sdk::member(*filter, name);
    return v != nullptr && v->IsBool() && v->GetBool();
  };
  l->tools = flag("toolsListChanged");
  l->prompts = flag("promptsListChanged");
  l->resources = flag("resourcesListChanged");
  std::vector<std::string> uris;
  size_t bytes = 0;
  if (const rapidjson::Value* list = sdk::member(*filter, "resourceSubscriptions");
      list != nullptr && list->IsArray()) {
    for (const auto& u : list->GetArray()) {
      if (!u.IsString()) continue;
      bytes += u.GetStringLength();
      if (uris.size() >= limits_.max_subscriptions || bytes > limits_.max_subscription_bytes) {
        return respond_error(request, jsonrpc::kInvalidParams,
                             cat("Invalid params: at most ", limits_.max_subscriptions, " resource subscriptions (",
                                 limits_.max_subscription_bytes / 1024, " KiB of URIs) per listen request"));
      }
      uris.emplace_back(u.GetString(), u.GetStringLength());
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (listeners_.size() >= kMaxListeners) {
      return respond_error(request, jsonrpc::kInternalError,
                           cat("Too many subscriptions/listen requests open: at most ", kMaxListeners,
                               " per connection; close one first"));
    }
  }
  // Which URIs exist is a plugin question: asked on a worker.
  run_async(request, [this, request, l, uris = std::move(uris), tasks = std::move(tasks)] {
    std::string honored;
    if (!tasks.empty()) {
      std::string ids;
      for (const auto& t : tasks) append(ids, ids.empty() ? "" : ",", sdk::quote(t->id));
      append(honored, R"("taskIds":[)", ids, "],");
    }
    if (l->tools) honored += R"("toolsListChanged":true,)";
    if (l->prompts) honored += R"("promptsListChanged":true,)";
    if (l->resources) honored += R"("resourcesListChanged":true,)";
    std::string accepted;
    for (const auto& uri : uris) {
      if (!server_.catalog().resource_exists(uri)) continue;  // nothing will ever update it
      if (l->uris.insert(uri).second) append(accepted, accepted.empty() ? "" : ",", sdk::quote(uri));
    }
    if (!accepted.empty()) append(honored, R"("resourceSubscriptions":[)", accepted, "],");
    if (!honored.empty()) honored.pop_back();
    {
      std::lock_guard lock(mutex_);
      listeners_[request->id] = l;
    }
    // The acknowledgement goes first; notify_listeners sends nothing to this listener before it
    // is in the table, and it is put there only now.
    send(request->reply, {jsonrpc::notification_message("notifications/subscriptions/acknowledged",
                                                        cat(R"({"notifications":{)", honored, R"(},"_meta":{")",
                                                            kMetaSubscription, R"(":)", request->id, "}}")),
                          request->id, false});
    watch_tasks(l, tasks);
  });
}

void session::watch_tasks(const std::shared_ptr<listener>& l, const std::vector<std::shared_ptr<task>>& tasks) {
  const int64_t poll_ms = server_.tasks().limits().poll_interval_ms;
  std::weak_ptr<session> weak_self = weak_from_this();
  std::weak_ptr<listener> weak_listener = l;
  auto tell = [weak_self, weak_listener](const std::string& detailed) {
    auto self = weak_self.lock();
    auto to = weak_listener.lock();
    if (!self || !to || self->closed_) return;
    const std::string json = jsonrpc::notification_message("notifications/tasks", detailed);
    rapidjson::Document doc;
    doc.Parse(json.c_str(), json.size());
    if (!doc.HasParseError()) self->send_to_listener(*to, doc);
  };
  for (const auto& t : tasks) {
    if (const uint64_t id = t->watch(poll_ms, tell)) {
      std::lock_guard lock(mutex_);
      l->tasks.emplace_back(t, id);
    } else {
      tell(t->json(true, poll_ms));  // ended since it was honored, or watched by 16 already: its state, once
    }
  }
}

void session::notify_listeners(const std::string& json) {
  {
    std::lock_guard lock(mutex_);
    if (listeners_.empty()) return;
  }
  std::vector<std::shared_ptr<listener>> to;
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  const auto method = doc.HasParseError() ? std::nullopt : sdk::string_member(doc, "method");
  if (!method) return;
  std::string uri;
  if (*method == "notifications/resources/updated") {
    if (const rapidjson::Value* p = sdk::member(doc, "params")) uri = sdk::string_member(*p, "uri").value_or("");
  }
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, l] : listeners_) {
      const bool wants = (*method == "notifications/tools/list_changed" && l->tools) ||
                         (*method == "notifications/prompts/list_changed" && l->prompts) ||
                         (*method == "notifications/resources/list_changed" && l->resources) ||
                         (!uri.empty() && l->uris.count(uri) != 0);
      if (wants) to.push_back(l);
    }
  }
  for (const auto& l : to) send_to_listener(*l, doc);
}

void session::send_to_listener(const listener& l, rapidjson::Document& doc) {
  auto& a = doc.GetAllocator();
  if (!doc.HasMember("params") || !doc["params"].IsObject()) {
    doc.RemoveMember("params");
    doc.AddMember("params", rapidjson::Value(rapidjson::kObjectType), a);
  }
  rapidjson::Value& params = doc["params"];
  if (!params.HasMember("_meta") || !params["_meta"].IsObject()) {
    params.RemoveMember("_meta");
    params.AddMember("_meta", rapidjson::Value(rapidjson::kObjectType), a);
  }
  rapidjson::Value& meta = params["_meta"];
  rapidjson::Document id;
  id.Parse(l.request->id.c_str(), l.request->id.size());
  meta.RemoveMember(rapidjson::StringRef(kMetaSubscription.data(), kMetaSubscription.size()));
  meta.AddMember(rapidjson::StringRef(kMetaSubscription.data(), kMetaSubscription.size()), rapidjson::Value(id, a), a);
  send(l.request->reply, {sdk::to_json(doc), l.request->id, false});
}

}  // namespace toolhost::mcp
