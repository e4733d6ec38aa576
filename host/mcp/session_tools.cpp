// tools/list and tools/call: the catalog answers which plugin serves a name, the permission policy
// (with the approval form of host/policy/approval.hpp) whether the call may run, and the call runs
// on a worker with its own context (progress, cancellation, questions to the client).
#include <toolhost/sdk/strings.hpp>

#include <cstring>

#include <rapidjson/reader.h>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/log.hpp"
#include "host/mcp/call_context.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/request_checks.hpp"
#include "host/mcp/session.hpp"
#include "host/mcp/session_params.hpp"
#include "host/policy/approval.hpp"
#include "host/policy/permissions.hpp"

namespace toolhost::mcp {

void session::tools_list(const request_ptr& request, const rapidjson::Value* params) {
  const std::string cursor = string_param(params, "cursor");
  // 2026-07-28 has no execution.taskSupport: task creation is the server's choice there.
  run_async(request, [this, request, cursor] {
    respond_page(request, "tools", server_.catalog().tools(!request->stateless), cursor);
  });
}

void session::tools_call(const request_ptr& request, const rapidjson::Value* params) {
  const std::string name = string_param(params, "name");
  if (name.empty()) {
    return respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"name\" (the tool to call) is required");
  }
  const rapidjson::Value* arguments = params != nullptr ? sdk::member(*params, "arguments") : nullptr;
  if (arguments != nullptr && !arguments->IsObject()) {
    return respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"arguments\" must be an object");
  }
  // A C plugin would see only the part before a NUL (the debugger's `open` opened that prefix):
  // refused here, once for every plugin.
  if (arguments != nullptr) {
    if (auto where = nul_byte_in(*arguments)) {
      return respond(request, sdk::result::error(cat("The argument ", *where, " contains a NUL byte (\\u0000), ",
                                                     "which no path, name or command can hold; send it without one."))
                                  .to_json());
    }
  }
  auto call = std::make_shared<call_state>();
  call->id = request->id;
  call->name = name;
  call->request = request;
  call->progress_token = request->progress_token;
  if (const rapidjson::Value* meta = object_param(params, "_meta")) call->meta_json = meta_for_plugins(*meta);
  // 2025-11-25: the client asks for a task, and how long to keep it (session_tasks.cpp).
  if (const rapidjson::Value* task = object_param(params, "task"); task != nullptr && !request->stateless) {
    call->task_requested = true;
    if (const rapidjson::Value* ttl = sdk::member(*task, "ttl"); ttl != nullptr && ttl->IsNumber()) {
      call->task_ttl_ms = static_cast<int64_t>(std::min(ttl->GetDouble(), 1e15));
    }
  }
  const std::string args = arguments != nullptr ? sdk::to_json(*arguments) : "{}";
  // 2026-07-28: questions become input-required rounds; a later round brings its requestState.
  if (!begin_input_rounds(request, params, name, args, *call)) return;
  {
    std::lock_guard lock(mutex_);
    if (!calls_.emplace(request->id, call).second) {
      return respond_error(request, jsonrpc::kInvalidRequest,
                           cat("Invalid Request: request id ", request->id, " is already in use"));
    }
  }
  // The limit counts from now: a call queued behind a tool that never returns is answered too.
  if (const uint32_t limit = server_.settings().call_timeout_for(name); limit > 0) {
    std::weak_ptr<session> weak = weak_from_this();
    call->deadline =
        server_.deadlines().add(deadlines::clock::now() + std::chrono::milliseconds(limit), [weak, call, limit] {
          if (auto self = weak.lock()) self->time_out(call, limit);
        });
  }
  run_async(request, [this, request, call, args] {
    // Over HTTP, what a gateway may have routed on (Mcp-Param-*) must be what the tool gets.
    // Looked up once for both: a lookup was a tenth of the instructions a 2026-07-28 HTTP call
    // spent beyond a 2025-11-25 one (bench/mcp).
    const auto target = server_.catalog().find_tool(call->name);
    const std::string mismatch = target ? param_header_mismatch(*request, *target, args) : "";
    std::string result = mismatch.empty() ? run_tool(call, args, target) : "";
    if (call->deadline != 0) server_.deadlines().remove(call->deadline);
    forget_call(call);
    if (finish_task(call, result)) return;      // it became a task: this is the task's result now
    if (call->answered.exchange(true)) return;  // its time limit answered it already
    if (call->cancelled) {                      // the client gave up on it: nothing more is sent for this request
      send(request->reply, {"", request->id, true});
      return;
    }
    if (!mismatch.empty()) {
      return respond_error(request, jsonrpc::kHeaderMismatch,
                           cat("Header mismatch: ", mismatch, "; send the same value in both"), {}, 400);
    }
    if (call->error_code != 0) {
      return respond_error(request, call->error_code, call->error_message, call->error_data,
                           request->stateless ? 400 : 0);
    }
    if (result.empty()) {
      // The tool may be one a plugin that did not start would have served: say which and why, as
      // a tool error the model reads.
      const std::string failures = server_.failed_plugins_text();
      if (failures.empty()) return respond_error(request, jsonrpc::kInvalidParams, cat("Unknown tool: ", call->name));
      return respond(request, sdk::result::error(cat("Unknown tool: ", call->name, ". ", failures)).to_json());
    }
    if (answered_with_input_round(request, *call, args)) return;  // it asked what only the person can answer
    respond(request, result);
  });
}

// The CallToolResult of one call, or "" when no plugin serves the name.
std::string session::run_tool(const std::shared_ptr<call_state>& call, const std::string& args,
                              const std::optional<catalog::tool_target>& target) {
  if (!server_.config_error().empty()) {
    return sdk::result::error(cat("toolhost refuses the tools of server '", server_.name(),
                                  "' until the user fixes its configuration: ", server_.config_error()))
        .to_json();
  }
  catalog& tools = server_.catalog();
  call_context context(shared_from_this(), call);
  if (!target) {
    // A name nobody listed may still be one a provider hides on purpose (a proxy's deny list) and
    // wants to explain; providers answer such names only with an error.
    sdk::string_writer out;
    return tools.call_unlisted_tool(context.raw(), call->name, args, out) ? finish_result(call, out.take()) : "";
  }
  if (!offer_task(call, target->flags)) return "{}";  // refused: the call carries the error
  const plugins::permission_kind* kind = server_.registry().find_kind(target->permission_kind);
  if (kind == nullptr) kind = server_.registry().find_kind(plugins::kRunKind);
  const bool suggestion = (target->flags & TOOLHOST_TOOL_SUGGESTION) != 0 ||
                          ((target->flags & TOOLHOST_TOOL_REVIEWABLE) != 0 && server_.settings().review_edits);
  const std::string files = server_.global().files();
  bool remembered = false;
  {
    std::lock_guard lock(mutex_);
    remembered = allowed_for_session_.count(kind->id) != 0;
  }
  const policy::tool_request question{call->name, server_.name(), kind->id, kind->label, server_.permission_of(*kind),
                                      suggestion, files,          args,     remembered};
  const policy::decision d = policy::authorize(
      question, [&](const std::string& message, const std::string& schema) -> std::optional<policy::answer> {
        std::string answer;
        const int32_t status = client_request(*call, "elicitation/create", policy::approval_request(message, schema), 0,
                                              answer, "toolhost_approval");
        if (status == TOOLHOST_ERR_UNSUPPORTED) return std::nullopt;  // the client cannot be asked
        if (status == TOOLHOST_ERR_CANCELLED && call->input_rounds && !call->cancelled) {
          return policy::answer{.pending = true};  // asked in this round's input-required result
        }
        return policy::read_approval(status == TOOLHOST_OK, answer);
      });
  if (!d.allowed) return sdk::result::error(d.message).to_json();
  if (d.remember_for_session) {
    std::lock_guard lock(mutex_);
    allowed_for_session_.insert(kind->id);
  }
  if (call->cancelled) return "{}";

  sdk::string_writer out;
  std::unique_lock<std::timed_mutex> serial;
  if (target->tool != nullptr && target->tool->serial) {
    serial = std::unique_lock<std::timed_mutex>(*target->tool->serial, std::defer_lock);
    // Its turn may never come (a call before it that never returns): wait while it is wanted.
    while (!serial.try_lock_for(std::chrono::milliseconds(50))) {
      if (call->cancelled) return "{}";
    }
  }
  if (call->cancelled) return "{}";  // cancelled while it waited for its turn
  if (!tools.call_tool(*target, context.raw(), call->name, args, out)) return "";
  return finish_result(call, out.take());
}

namespace {

// Reads a JSON text for whether it is an object with a "content" array among its own members,
// with RapidJSON's SAX reader: a DOM was built only to look at that one member, and was a
// seventh of an echo call's instructions (callgrind, bench/mcp).
struct content_array_finder : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, content_array_finder> {
  int depth = 0;
  bool after_content_key = false;  // the last event was the root's key "content"
  bool found = false;

  bool Default() {  // every scalar
    after_content_key = false;
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    after_content_key = depth == 1 && std::string_view(s, n) == "content";
    return true;
  }
  bool StartObject() {
    after_content_key = false;
    ++depth;
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    --depth;
    return true;
  }
  bool StartArray() {
    found = found || after_content_key;
    after_content_key = false;
    ++depth;
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    --depth;
    return true;
  }
};

bool is_call_tool_result(const std::string& raw) {
  if (std::memchr(raw.data(), '\0', raw.size()) != nullptr) return false;  // never in JSON text
  sdk::scratch_memory<1024> stack;  // where the reader copies each key and string
  rapidjson::GenericReader<rapidjson::UTF8<>, rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>> reader(stack.get());
  rapidjson::StringStream in(raw.c_str());
  content_array_finder finder;
  return !reader.Parse(in, finder).IsError() && finder.found;
}

}  // namespace

std::string session::finish_result(const std::shared_ptr<call_state>& call, std::string raw) {
  if (!is_call_tool_result(raw)) {
    log::warning("session", cat("tool ", call->name, " returned an invalid result: ", raw.substr(0, 200)));
    return sdk::result::error(
               cat("The tool ", call->name,
                   " returned an invalid result (not an MCP CallToolResult); this is a bug in its plugin."))
        .to_json();
  }
  // One message is one line on stdio: a result written over several lines is made compact.
  // (Two memchr scans: find_first_of("\r\n") ran one memchr per character, 1.1k instructions of
  // an echo call.)
  if (std::memchr(raw.data(), '\n', raw.size()) != nullptr || std::memchr(raw.data(), '\r', raw.size()) != nullptr) {
    return sdk::to_json(*sdk::parse_json(raw));
  }
  return raw;
}

void session::time_out(const std::shared_ptr<call_state>& call, uint32_t limit_ms) {
  const std::string error =
      sdk::result::error(cat("The tool ", call->name, " did not finish within ", limit_ms,
                             " ms (call_timeout_ms of server '", server_.name(),
                             "'), so toolhost stopped waiting and asked it to stop. It may still be busy; calls ",
                             "of it that wait their turn meanwhile time out the same way."))
          .to_json();
  if (const std::shared_ptr<task> t = task_of(*call)) {  // a task ends with that tool error
    server_.tasks().settle(t, task_status::completed, error, false);
    call->cancel();
    return;
  }
  if (call->answered.exchange(true)) return;
  forget_call(call);
  log::warning("session", cat("tool ", call->name, " (request ", call->id, ") did not finish within ", limit_ms,
                              " ms; answered with an error and cancelled"));
  respond(call->request, error);
  call->cancel();
}

}  // namespace toolhost::mcp
