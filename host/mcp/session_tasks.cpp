// Tasks (tasks.hpp) in the session: which tools/call becomes a task, the moment it does, and the
// methods that read, answer and cancel one, in both eras.
//
// 2026-07-28 (the io.modelcontextprotocol/tasks extension): task creation is the server's
// choice, offered only to a request that declares the extension. A call of a tool marked
// TOOLHOST_TOOL_TASKS runs as usual for its first moments (kSyncWindowMs): a call that finishes
// by then is answered directly, and one whose questions (an ask row's approval, a plugin's
// elicit) cannot be answered yet ends with an input-required result, as the extension asks
// ("resolve all MRTR exchanges synchronously before responding with a CreateTaskResult").
// Still running after that, it becomes a task: the request is answered with its handle, its
// progress becomes the task's status message, and its later questions wait in the task's
// inputRequests for tasks/update. A subscriptions/listen request that names it in taskIds gets
// notifications/tasks at each change of its status.
//
// 2025-11-25 (experimental tasks): the client asks for a task with params.task; the call becomes
// one at once, keeps sending progress to its token and asks its questions as server requests on
// the session's own stream, and tasks/result waits for its end.
#include <algorithm>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/strings.hpp>

#include "host/log.hpp"
#include "host/mcp/call_context.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/mcp/session_params.hpp"

namespace toolhost::mcp {
namespace {

// How long a task-capable call runs before it becomes a task (2026-07-28).
constexpr int kSyncWindowMs = 250;

// Task ids one subscriptions/listen request may ask notifications/tasks for.
constexpr size_t kMaxWatchedTasks = 64;

std::string required_tasks_data() {
  return cat(R"({"requiredCapabilities":{"extensions":{)", sdk::quote(kTasksExtension), ":{}}}}");
}

}  // namespace

std::string session::task_owner(const request_context& request) const {
  return request.stateless ? std::string("stateless") : cat("session:", uid_);
}

std::shared_ptr<task> session::task_of(call_state& call, bool close) {
  const std::shared_ptr<task_offer> offer = call.offer;
  if (!offer) return nullptr;
  std::lock_guard lock(offer->mutex);
  if (offer->at == task_offer::phase::task) return offer->made;
  if (close) offer->at = task_offer::phase::closed;
  return nullptr;
}

bool session::offer_task(const std::shared_ptr<call_state>& call, uint32_t flags) {
  const request_context& request = *call->request;
  const bool capable = (flags & TOOLHOST_TOOL_TASKS) != 0;
  const bool required = capable && (flags & TOOLHOST_TOOL_TASKS_REQUIRED) != 0;
  auto offer = std::make_shared<task_offer>();
  offer->owner = task_owner(request);
  if (request.stateless) {
    const bool declared = request.declares_tasks;
    if (required && !declared) {
      call->error_code = jsonrpc::kMissingClientCapability;
      call->error_message =
          cat("Missing required client capability: ", call->name, " runs only as a task; declare the '",
              kTasksExtension, "' extension in _meta's clientCapabilities");
      call->error_data = required_tasks_data();
      return false;
    }
    if (!capable || !declared) return true;  // a legacy params.task changes nothing in this era
    offer->era = task_era::v2026;
  } else {
    if (protocol_version() != "2025-11-25") return true;
    if (call->task_requested && !capable) {
      call->error_code = jsonrpc::kMethodNotFound;
      call->error_message = cat("Method not found: ", call->name,
                                " does not run as a task (its execution.taskSupport is forbidden); call it without "
                                "params.task");
      return false;
    }
    if (required && !call->task_requested) {
      call->error_code = jsonrpc::kMethodNotFound;
      call->error_message =
          cat("Method not found: ", call->name,
              " runs only as a task (its execution.taskSupport is required); call it with params.task");
      return false;
    }
    if (!call->task_requested) return true;
    offer->era = task_era::v2025;
    offer->ttl_ms = call->task_ttl_ms;
  }
  call->offer = offer;
  if (offer->era == task_era::v2025) {
    become_task(call);  // the client asked for a task: it gets one at once
    return true;
  }
  std::weak_ptr<session> weak = weak_from_this();
  const uint64_t window =
      server_.deadlines().add(deadlines::clock::now() + std::chrono::milliseconds(kSyncWindowMs), [weak, call] {
        if (auto self = weak.lock()) self->become_task(call);
      });
  std::lock_guard lock(offer->mutex);
  offer->window = window;
  return true;
}

void session::become_task(const std::shared_ptr<call_state>& call) {
  const std::shared_ptr<task_offer> offer = call->offer;
  std::string handle;
  {
    std::lock_guard lock(offer->mutex);
    if (offer->at != task_offer::phase::open || call->cancelled || call->answered) return;
    auto t = server_.tasks().create(offer->owner, call->name, offer->era, offer->ttl_ms, call);
    if (!t) {
      // Full of running tasks: the call answers as it would for a client without tasks.
      offer->at = task_offer::phase::closed;
      log::warning("session", cat("tool ", call->name, " runs without a task: ", server_.tasks().limits().max_tasks,
                                  " tasks are running"));
      return;
    }
    offer->at = task_offer::phase::task;
    offer->made = t;
    const int64_t poll_ms = server_.tasks().limits().poll_interval_ms;
    const std::string task_json = t->json(false, poll_ms);
    if (offer->era == task_era::v2026) {
      handle = cat(R"({"resultType":"task",)", task_json.substr(1));
    } else {
      handle = cat(R"({"task":)", task_json, "}");
      // 2025-11-25 lets the receiver of a task tell its requestor of each status change: the
      // client learns of input_required and of the end without waiting for its next poll.
      std::weak_ptr<session> weak = weak_from_this();
      t->watch(poll_ms, [weak](const std::string& shown) {
        if (auto self = weak.lock()) {
          self->send_notification(
              cat(R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":)", shown, "}"));
        }
      });
    }
  }
  // The session no longer answers the request: closing it (a 2026-07-28 POST's stream ends with
  // the handle) does not cancel the call, and its id is free again.
  forget_call(call);
  log::debug("session", cat("tool ", call->name, " (request ", call->id, ") runs as task ", offer->made->id));
  respond(call->request, handle);
}

bool session::finish_task(const std::shared_ptr<call_state>& call, const std::string& result) {
  const std::shared_ptr<task_offer> offer = call->offer;
  if (!offer) return false;
  std::shared_ptr<task> t;
  uint64_t window = 0;
  {
    std::lock_guard lock(offer->mutex);
    window = offer->window;
    offer->window = 0;
    if (offer->at == task_offer::phase::task) {
      t = offer->made;
    } else {
      offer->at = task_offer::phase::closed;  // finished in its first moments: answered directly
    }
  }
  if (window != 0) server_.deadlines().remove(window);
  if (!t) return false;
  task_store& store = server_.tasks();
  if (call->cancelled) {
    // The plugin returned: the cancellation reached it (a task's call is no longer the session's,
    // so the usual "client cancelled" line is not about it).
    log::debug("session", cat("task ", t->id, " (", call->name, "): its call stopped after the cancellation"));
    store.settle(t, task_status::cancelled, "");
  } else if (call->error_code != 0 || !call->missing_capability.empty() || result.empty()) {
    // A protocol error: the task failed, and its error is the one the request would have had.
    int code = call->error_code;
    std::string message = call->error_message, data = call->error_data;
    if (code == 0 && !call->missing_capability.empty()) {
      code = jsonrpc::kMissingClientCapability;
      message = cat("Missing required client capability: ", call->name, " needs the client's '",
                    call->missing_capability, "' capability");
      data = cat(R"({"requiredCapabilities":{)", sdk::quote(call->missing_capability), ":{}}}");
    } else if (code == 0) {
      code = jsonrpc::kInvalidParams;
      message = cat("Unknown tool: ", call->name);
    }
    std::string error = cat(R"({"code":)", code, R"(,"message":)", sdk::quote(message));
    if (!data.empty()) append(error, R"(,"data":)", data);
    error += '}';
    t->set_message(message);
    store.settle(t, task_status::failed, std::move(error));
  } else if (t->era == task_era::v2026) {
    // What the request would have been answered with: a 2026-07-28 CallToolResult, resultType
    // and all (the extension's client checks the result against that shape).
    store.settle(t, task_status::completed, stateless_result(*call->request, result));
  } else {
    store.settle(t, task_status::completed, result);
  }
  return true;
}

// ---- The methods ------------------------------------------------------------------------------

std::shared_ptr<task> session::find_task(const request_ptr& request, const rapidjson::Value* params) {
  if (request->stateless && !request->declares_tasks) {
    respond_error(request, jsonrpc::kMissingClientCapability,
                  cat("Missing required client capability: ", request->method, " belongs to the '", kTasksExtension,
                      "' extension; declare it in _meta's clientCapabilities"),
                  required_tasks_data(), 400);
    return nullptr;
  }
  const rapidjson::Value* id = params != nullptr ? sdk::member(*params, "taskId") : nullptr;
  if (id == nullptr || !id->IsString()) {
    respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"taskId\" (a string) is required");
    return nullptr;
  }
  auto t = server_.tasks().find(sdk::as_view(*id), task_owner(*request));
  if (!t) {
    const std::string shown(sdk::as_view(*id).substr(0, 100));
    respond_error(
        request, jsonrpc::kInvalidParams,
        cat("Failed to retrieve task: no task '", shown, "' (unknown, expired after its ttl, or another client's)"));
  }
  return t;
}

bool session::tasks_to_watch(const request_ptr& request, const rapidjson::Value& ids,
                             std::vector<std::shared_ptr<task>>& out) {
  if (!request->declares_tasks) {
    respond_error(request, jsonrpc::kMissingClientCapability,
                  cat("Missing required client capability: notifications for taskIds belong to the '", kTasksExtension,
                      "' extension; declare it in _meta's clientCapabilities"),
                  required_tasks_data(), 400);
    return false;
  }
  if (!ids.IsArray() || ids.Size() > kMaxWatchedTasks ||
      std::any_of(ids.Begin(), ids.End(), [](const rapidjson::Value& v) { return !v.IsString(); })) {
    respond_error(request, jsonrpc::kInvalidParams,
                  cat("Invalid params: \"taskIds\" must be an array of at most ", kMaxWatchedTasks, " task ids"));
    return false;
  }
  // Unknown, finished and other clients' tasks are left out: nothing will be said of them.
  for (const auto& id : ids.GetArray()) {
    auto t = server_.tasks().find(sdk::as_view(id), task_owner(*request));
    if (t && !is_terminal(t->status()) && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return true;
}

void session::tasks_get(const request_ptr& request, const rapidjson::Value* params) {
  auto t = find_task(request, params);
  if (!t) return;
  respond(request, t->json(request->stateless, server_.tasks().limits().poll_interval_ms));
}

void session::tasks_update(const request_ptr& request, const rapidjson::Value* params) {
  auto t = find_task(request, params);
  if (!t) return;
  const rapidjson::Value* responses = sdk::member(*params, "inputResponses");
  if (responses == nullptr || !responses->IsObject()) {
    return respond_error(request, jsonrpc::kInvalidParams,
                         "Invalid params: \"inputResponses\" (answers keyed as the task's inputRequests) must be an "
                         "object");
  }
  t->answer(*responses);
  respond(request, "{}");
}

void session::tasks_cancel(const request_ptr& request, const rapidjson::Value* params) {
  auto t = find_task(request, params);
  if (!t) return;
  if (!request->stateless && is_terminal(t->status())) {
    return respond_error(
        request, jsonrpc::kInvalidParams,
        cat("Invalid params: task ", t->id, " is ", task_status_name(t->status()), " already and cannot be cancelled"));
  }
  log::debug("session", cat("client cancelled task ", t->id, " (", t->tool, ")"));
  server_.tasks().cancel(t);
  // 2026-07-28 acknowledges with an empty result; 2025-11-25 answers with the task.
  respond(request, request->stateless ? "{}" : t->json(false, server_.tasks().limits().poll_interval_ms));
}

void session::tasks_result(const request_ptr& request, const rapidjson::Value* params) {
  auto t = find_task(request, params);
  if (!t) return;
  // Waits on a worker: the task's end may be far off. The wait ends with the session or when the
  // client cancels this request.
  auto waiting = std::make_shared<call_state>();
  waiting->id = request->id;
  waiting->name = "tasks/result";
  waiting->request = request;
  {
    std::lock_guard lock(mutex_);
    if (!calls_.emplace(request->id, waiting).second) {
      return respond_error(request, jsonrpc::kInvalidRequest,
                           cat("Invalid Request: request id ", request->id, " is already in use"));
    }
  }
  run_async(request, [this, request, t, waiting] {
    const bool ended = t->wait_terminal([this, waiting] { return waiting->cancelled.load() || closed_.load(); });
    forget_call(waiting);
    if (!ended) return send(request->reply, {"", request->id, true});
    bool is_error = false;
    std::string payload = t->payload(is_error);
    if (is_error) {
      auto error = sdk::parse_json(payload);
      const int code = error && error->IsObject() && sdk::member(*error, "code") != nullptr && (*error)["code"].IsInt()
                           ? (*error)["code"].GetInt()
                           : jsonrpc::kInternalError;
      const std::string message(error && error->IsObject() ? sdk::string_member(*error, "message").value_or("") : "");
      const rapidjson::Value* data = error && error->IsObject() ? sdk::member(*error, "data") : nullptr;
      return respond_error(request, code, message, data != nullptr ? sdk::to_json(*data) : "");
    }
    // The result says which task it belongs to.
    auto doc = sdk::parse_json(payload);
    if (doc && doc->IsObject()) {
      auto& a = doc->GetAllocator();
      if (!doc->HasMember("_meta") || !(*doc)["_meta"].IsObject()) {
        doc->RemoveMember("_meta");
        doc->AddMember("_meta", rapidjson::Value(rapidjson::kObjectType), a);
      }
      rapidjson::Value related(rapidjson::kObjectType);
      related.AddMember("taskId", rapidjson::Value(t->id.c_str(), a), a);
      (*doc)["_meta"].RemoveMember("io.modelcontextprotocol/related-task");
      (*doc)["_meta"].AddMember("io.modelcontextprotocol/related-task", related, a);
      payload = sdk::to_json(*doc);
    }
    respond(request, payload);
  });
}

void session::tasks_list(const request_ptr& request, const rapidjson::Value* params) {
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& t : server_.tasks().list(task_owner(*request))) {
    items.emplace_back(t->id, t->json(false, server_.tasks().limits().poll_interval_ms));
  }
  respond_page(request, "tasks", items, string_param(params, "cursor"));
}

}  // namespace toolhost::mcp
