// Resources (list, templates, read, subscribe), prompts and completion: what each asks of the
// catalog, and the answers it turns that into. Everything that may run plugin code runs on a
// worker.
#include <toolhost/sdk/strings.hpp>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/mcp/call_context.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/mcp/session_params.hpp"

namespace toolhost::mcp {
namespace {

// A plugin's answer goes on the wire as a JSON-RPC result only if it is one JSON object:
// anything else would corrupt the stream.
bool is_json_object(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  return !doc.HasParseError() && doc.IsObject();
}

}  // namespace

void session::respond_page(const request_ptr& request, const char* field,
                           const std::vector<std::pair<std::string, std::string>>& items, const std::string& cursor) {
  auto page = server_.catalog().page(field, items, cursor);
  if (!page.ok()) return respond_error(request, jsonrpc::kInvalidParams, view(page.status().message()));
  respond(request, *page);
}

void session::resources_list(const request_ptr& request, const rapidjson::Value* params) {
  const std::string cursor = string_param(params, "cursor");
  run_async(request,
            [this, request, cursor] { respond_page(request, "resources", server_.catalog().resources(), cursor); });
}

void session::resource_templates_list(const request_ptr& request, const rapidjson::Value* params) {
  const std::string cursor = string_param(params, "cursor");
  run_async(request, [this, request, cursor] {
    respond_page(request, "resourceTemplates", server_.catalog().resource_templates(), cursor);
  });
}

void session::resources_read(const request_ptr& request, const rapidjson::Value* params) {
  const std::string uri = string_param(params, "uri");
  if (uri.empty()) return respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"uri\" is required");
  auto call = std::make_shared<call_state>();
  call->id = request->id;
  call->name = uri;
  call->request = request;
  if (!begin_input_rounds(request, params, uri, "", *call)) return;
  run_async(request, [this, request, uri, call] {
    call_context context(shared_from_this(), call);
    sdk::string_writer out;
    const toolhost_status_t s = server_.catalog().read_resource(context.raw(), uri, out);
    if (answered_with_input_round(request, *call, "")) return;  // it asked the person something
    if (s == TOOLHOST_OK && !is_json_object(out.text())) {
      return respond_error(
          request, jsonrpc::kInternalError,
          cat("Could not read ", uri, ": the plugin's answer is not a JSON object (a ReadResourceResult)"));
    }
    if (s == TOOLHOST_OK) return respond(request, out.take());
    if (s == TOOLHOST_ERR_NOT_FOUND) {
      // The plugin's own sentence says why (which record, which process), when it gave one.
      const std::string why = is_json_object(out.text()) ? "" : out.text();
      const std::string what = why.empty() ? uri : why.find(uri) != std::string::npos ? why : cat(uri, ": ", why);
      // 2026-07-28 made it -32602; earlier revisions say -32002.
      return respond_error(request, request->stateless ? jsonrpc::kInvalidParams : jsonrpc::kResourceNotFound,
                           cat("Resource not found: ", what), cat(R"({"uri":)", sdk::quote(uri), "}"));
    }
    respond_error(request, jsonrpc::kInternalError,
                  cat("Could not read ", uri, ": ", out.text().empty() ? "the plugin failed" : out.text()));
  });
}

// Refuses (and answers) when one more subscription to `uri` would pass the session's limits.
bool session::subscription_refused(const request_ptr& request, const std::string& uri) {
  size_t count = 0;
  {
    std::lock_guard lock(mutex_);
    if (subscriptions_.size() < limits_.max_subscriptions &&
        subscription_bytes_ + uri.size() <= limits_.max_subscription_bytes) {
      return false;
    }
    count = subscriptions_.size();
  }
  respond_error(
      request, jsonrpc::kInvalidParams,
      cat("Invalid params: this session already has ", count, " subscriptions (at most ", limits_.max_subscriptions,
          ", with ", limits_.max_subscription_bytes / 1024, " KiB of URIs); unsubscribe from some first"));
  return true;
}

void session::resources_subscribe(const request_ptr& request, const rapidjson::Value* params) {
  const std::string uri = string_param(params, "uri");
  if (uri.empty()) return respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"uri\" is required");
  {
    std::lock_guard lock(mutex_);
    if (subscriptions_.count(uri) != 0) return respond(request, "{}");
  }
  if (subscription_refused(request, uri)) return;  // the cheap refusal, before the lookup
  run_async(request, [this, request, uri] {
    if (!server_.catalog().resource_exists(uri)) {
      return respond_error(request, jsonrpc::kResourceNotFound,
                           cat("Resource not found: ", uri.size() > 200 ? uri.substr(0, 200) + "..." : uri,
                               "; subscribe to a resource that resources/list or a template names"));
    }
    if (subscription_refused(request, uri)) return;
    {
      std::lock_guard lock(mutex_);
      if (subscriptions_.insert(uri).second) subscription_bytes_ += uri.size();
    }
    respond(request, "{}");
  });
}

void session::resources_unsubscribe(const request_ptr& request, const rapidjson::Value* params) {
  const std::string uri = string_param(params, "uri");
  if (uri.empty()) return respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"uri\" is required");
  {
    std::lock_guard lock(mutex_);
    if (subscriptions_.erase(uri) != 0) subscription_bytes_ -= uri.size();
  }
  respond(request, "{}");
}

void session::prompts_list(const request_ptr& request, const rapidjson::Value* params) {
  const std::string cursor = string_param(params, "cursor");
  run_async(request,
            [this, request, cursor] { respond_page(request, "prompts", server_.catalog().prompts(), cursor); });
}

void session::prompts_get(const request_ptr& request, const rapidjson::Value* params) {
  const std::string name = string_param(params, "name");
  if (name.empty()) return respond_error(request, jsonrpc::kInvalidParams, "Invalid params: \"name\" is required");
  const rapidjson::Value* arguments = object_param(params, "arguments");
  const std::string args = arguments != nullptr ? sdk::to_json(*arguments) : "{}";
  auto call = std::make_shared<call_state>();
  call->id = request->id;
  call->name = name;
  call->request = request;
  if (!begin_input_rounds(request, params, name, args, *call)) return;
  run_async(request, [this, request, name, args, call] {
    call_context context(shared_from_this(), call);
    sdk::string_writer out;
    const toolhost_status_t s = server_.catalog().get_prompt(context.raw(), name, args, out);
    if (answered_with_input_round(request, *call, args)) return;  // it asked the person something
    if (s == TOOLHOST_OK && !is_json_object(out.text())) {
      return respond_error(
          request, jsonrpc::kInternalError,
          cat("Prompt ", name, " failed: the plugin's answer is not a JSON object (a GetPromptResult)"));
    }
    if (s == TOOLHOST_OK) return respond(request, out.take());
    if (s == TOOLHOST_ERR_NOT_FOUND)
      return respond_error(request, jsonrpc::kInvalidParams, cat("Unknown prompt: ", name));
    if (s == TOOLHOST_ERR_INVALID_ARGUMENT) {
      return respond_error(request, jsonrpc::kInvalidParams,
                           out.text().empty() ? "Invalid prompt arguments" : out.text());
    }
    respond_error(request, jsonrpc::kInternalError, cat("Prompt ", name, " failed: ", out.text()));
  });
}

void session::complete(const request_ptr& request, const rapidjson::Value* params) {
  const rapidjson::Value* ref = object_param(params, "ref");
  const rapidjson::Value* argument = object_param(params, "argument");
  if (ref == nullptr || argument == nullptr) {
    return respond_error(request, jsonrpc::kInvalidParams,
                         "Invalid params: \"ref\" and \"argument\" objects are required");
  }
  const std::string type(sdk::string_member(*ref, "type").value_or(""));
  if (type != "ref/prompt" && type != "ref/resource") {
    return respond_error(request, jsonrpc::kInvalidParams,
                         "Invalid params: ref.type must be \"ref/prompt\" or \"ref/resource\"");
  }
  const std::string ref_name(sdk::string_member(*ref, type == "ref/resource" ? "uri" : "name").value_or(""));
  const std::string arg_name(sdk::string_member(*argument, "name").value_or(""));
  const std::string value(sdk::string_member(*argument, "value").value_or(""));
  const rapidjson::Value* context = object_param(params, "context");
  const rapidjson::Value* context_args = context != nullptr ? object_param(context, "arguments") : nullptr;
  const std::string context_json = context_args != nullptr ? sdk::to_json(*context_args) : "{}";
  const std::string ref_json = sdk::to_json(*ref);
  run_async(request, [this, request, type, ref_name, arg_name, value, context_json, ref_json] {
    sdk::string_writer out;
    if (!server_.catalog().complete(type, ref_name, ref_json, arg_name, value, context_json, out)) {
      return respond_error(request, jsonrpc::kInvalidParams,
                           cat("Unknown ", type == "ref/prompt" ? "prompt" : "resource", ": ", ref_name));
    }
    auto doc = sdk::parse_json(out.text());
    if (!doc || !doc->IsObject()) return respond(request, R"({"completion":{"values":[],"hasMore":false}})");
    respond(request, cat(R"({"completion":)", out.text(), "}"));
  });
}

}  // namespace toolhost::mcp
