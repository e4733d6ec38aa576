// The 2026-07-28 era's questions to the person, for every request that may ask them (tools/call,
// prompts/get, resources/read): the request is bound to a requestState, the plugin runs with the
// answers it brings, and what it still asks becomes an InputRequiredResult (input_required.hpp).
// Also the Mcp-Param-* check of a tools/call over HTTP, which needs the tool's inputSchema.
#include <toolhost/sdk/strings.hpp>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/param_headers.hpp>

#include "host/mcp/call_context.hpp"
#include "host/mcp/input_required.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"

namespace toolhost::mcp {

bool session::begin_input_rounds(const request_ptr& request, const rapidjson::Value* params, std::string_view name,
                                 std::string_view args, call_state& call) {
  if (!request->stateless) return true;
  call.input_rounds = true;
  const rapidjson::Value* state = params != nullptr ? sdk::member(*params, "requestState") : nullptr;
  if (state == nullptr) return true;  // a first round: inputResponses without a state answer nothing asked
  if (!state->IsString()) {
    respond_error(request, jsonrpc::kInvalidParams,
                  "Invalid params: \"requestState\" must be the string this server gave");
    return false;
  }
  auto opened =
      input_required::open(sdk::as_view(*state), input_required::binding(server_.name(), request->method, name, args),
                           sdk::member(*params, "inputResponses"));
  if (!opened.ok()) {
    respond_error(request, jsonrpc::kInvalidParams, std::string(opened.status().message()));
    return false;
  }
  call.answers = *std::move(opened);
  return true;
}

bool session::answered_with_input_round(const request_ptr& request, call_state& call, std::string_view args) {
  if (!call.missing_capability.empty()) {
    respond_error(request, jsonrpc::kMissingClientCapability,
                  cat("Missing required client capability: ", call.name, " needs the client's '",
                      call.missing_capability, "' capability; declare it in _meta's clientCapabilities"),
                  cat(R"({"requiredCapabilities":{)", sdk::quote(call.missing_capability), ":{}}}"), 400);
    return true;
  }
  std::vector<std::string> keys;
  std::vector<std::pair<std::string, std::string>> questions;
  {
    std::lock_guard lock(call.input_mutex);
    if (call.input_requests.empty()) return false;
    questions = call.input_requests;
  }
  for (const auto& [key, question] : questions) keys.push_back(key);
  // Bound here, not when the call began: most calls ask nothing, and the binding copies the arguments.
  const std::string bound = input_required::binding(server_.name(), request->method, call.name, args);
  respond(request, input_required::result(questions, input_required::seal(bound, keys, call.answers)));
  return true;
}

std::string session::param_header_mismatch(const request_context& request, const catalog::tool_target& tool,
                                           const std::string& args) {
  if (!request.http || !tool.header_params) return {};
  auto arguments = sdk::parse_json(args);
  return sdk::param_headers::mismatch(*tool.header_params, arguments ? &*arguments : nullptr, request.param_headers);
}

}  // namespace toolhost::mcp
