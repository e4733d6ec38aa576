// tools/list and tools/call: the catalog answers which plugin serves a name, the permission policy
// (with the approval form of host/policy/approval.hpp) whether the call may run, and the call runs
// on a worker with its own context (progress, cancellation, questions to the client).
#include <toolhost/sdk/strings.hpp>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/log.hpp"
#include "host/mcp/call_context.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/mcp/session_params.hpp"
#include "host/policy/approval.hpp"
#include "host/policy/permissions.hpp"
#include "host/policy/privacy.hpp"

namespace toolhost::mcp {

void session::tools_list(const request_ptr& request, const rapidjson::Value* params) {
  const std::string cursor = string_param(params, "cursor");
  run_async(request, [this, request, cursor] { respond_page(request, "tools", server_.catalog().tools(), cursor); });
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
  auto call = std::make_shared<call_state>();
  call->id = request->id;
  call->name = name;
  call->request = request;
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
    if (!calls_.emplace(request->id, call).second) {
      return respond_error(request, jsonrpc::kInvalidRequest,
                           cat("Invalid Request: request id ", request->id, " is already in use"));
    }
  }
  run_async(request, [this, request, call, args] {
    std::string result = run_tool(call, args);
    forget_call(call->id);
    if (call->cancelled) {  // the client gave up on it: nothing more is sent for this request
      send(request->reply, {"", request->id, true});
      return;
    }
    if (result.empty()) return respond_error(request, jsonrpc::kInvalidParams, cat("Unknown tool: ", call->name));
    respond(request, result);
  });
}

// The CallToolResult of one call, or "" when no plugin serves the name.
std::string session::run_tool(const std::shared_ptr<call_state>& call, const std::string& args) {
  catalog& tools = server_.catalog();
  call_context context(shared_from_this(), call);
  const auto target = tools.find_tool(call->name);
  if (!target) {
    // A name nobody listed may still be one a provider hides on purpose (a proxy's deny list) and
    // wants to explain; providers answer such names only with an error.
    sdk::string_writer out;
    return tools.call_unlisted_tool(context.raw(), call->name, args, out) ? finish_result(call, out.take()) : "";
  }
  const plugins::permission_kind* kind = server_.registry().find_kind(target->permission_kind);
  if (kind == nullptr) kind = server_.registry().find_kind(plugins::kRunKind);
  const bool suggestion = (target->flags & TOOLHOST_TOOL_SUGGESTION) != 0 ||
                          ((target->flags & TOOLHOST_TOOL_REVIEWABLE) != 0 && server_.settings().review_edits);
  const policy::tool_request question{call->name, server_.name(), kind->id, kind->label, server_.permission_of(*kind),
                                      suggestion, server_.global().path};
  const policy::decision d = policy::authorize(
      question, [&](const std::string& message, const std::string& schema) -> std::optional<policy::answer> {
        std::string answer;
        const int32_t status =
            client_request(*call, "elicitation/create", policy::approval_request(message, schema), 0, answer);
        if (status == TOOLHOST_ERR_UNSUPPORTED) return std::nullopt;  // the client cannot be asked
        return policy::read_approval(status == TOOLHOST_OK, answer);
      });
  if (!d.allowed) return sdk::result::error(d.message).to_json();
  if (call->cancelled) return "{}";

  sdk::string_writer out;
  std::unique_lock<std::mutex> serial;
  if (target->tool != nullptr && target->tool->serial) serial = std::unique_lock<std::mutex>(*target->tool->serial);
  if (call->cancelled) return "{}";  // cancelled while it waited for its turn
  if (!tools.call_tool(*target, context.raw(), call->name, args, out)) return "";
  return finish_result(call, out.take());
}

std::string session::finish_result(const std::shared_ptr<call_state>& call, std::string raw) {
  rapidjson::Document doc;
  doc.Parse(raw.c_str(), raw.size());
  const rapidjson::Value* content = doc.HasParseError() ? nullptr : sdk::member(doc, "content");
  if (content == nullptr || !content->IsArray()) {
    log::warning("session", cat("tool ", call->name, " returned an invalid result: ", raw.substr(0, 200)));
    return sdk::result::error(cat("The tool ", call->name,
                                  " returned an invalid result (not an MCP CallToolResult); this is a bug in its plugin."))
        .to_json();
  }
  if (server_.settings().privacy.hide_home_in_paths && !server_.home().empty()) {
    policy::hide_home(doc, doc.GetAllocator(), server_.home());
  }
  return sdk::to_json(doc);
}

}  // namespace toolhost::mcp
