#include <toolhost/mcp_client/input_rounds.hpp>

#include <chrono>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp_client {

namespace sdk = toolhost::sdk;

absl::StatusOr<std::optional<input_round>> read_input_round(std::string_view result_json) {
  if (result_json.find("input_required") == std::string_view::npos) return std::nullopt;
  auto doc = sdk::parse_json(result_json);
  if (!doc || !doc->IsObject()) return std::nullopt;
  auto type = sdk::string_member(*doc, "resultType");
  if (!type || *type != "input_required") return std::nullopt;
  const rapidjson::Value* requests = sdk::member(*doc, "inputRequests");
  if (requests == nullptr || !requests->IsObject() || requests->ObjectEmpty()) {
    return absl::InternalError("the upstream answered input_required without any inputRequests");
  }
  input_round round;
  for (const auto& m : requests->GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    const auto method = m.value.IsObject() ? sdk::string_member(m.value, "method") : std::nullopt;
    if (!method) {
      return absl::InternalError("the upstream's input request '" + key + "' is not an object with a method");
    }
    const rapidjson::Value* params = sdk::member(m.value, "params");
    round.requests.push_back(
        {key, std::string(*method), params != nullptr && params->IsObject() ? sdk::to_json(*params) : "{}"});
  }
  if (const rapidjson::Value* state = sdk::member(*doc, "requestState")) round.request_state = sdk::to_json(*state);
  return round;
}

absl::StatusOr<std::map<std::string, std::string>> answer_round(const input_round& round, const input_fn& answer) {
  std::map<std::string, std::string> answers;
  absl::Status first_failure;
  for (const input_request& q : round.requests) {
    auto a = answer(q);
    if (!a.ok()) {
      if (first_failure.ok()) first_failure = a.status();
      continue;
    }
    answers[q.key] = *std::move(a);
  }
  if (!first_failure.ok()) return first_failure;
  return answers;
}

std::string retry_params(std::string_view params_json, const std::map<std::string, std::string>& answers,
                         const input_round& round) {
  rapidjson::Document params;
  params.Parse(params_json.data(), params_json.size());
  if (params.HasParseError() || !params.IsObject()) params.SetObject();
  auto& alloc = params.GetAllocator();
  rapidjson::Value responses(rapidjson::kObjectType);
  for (const auto& [key, result] : answers) {
    rapidjson::Document value(&alloc);
    value.Parse(result.c_str(), result.size());
    if (value.HasParseError()) continue;
    responses.AddMember(rapidjson::Value(key.c_str(), alloc), rapidjson::Value(value, alloc), alloc);
  }
  params.RemoveMember("inputResponses");
  params.RemoveMember("requestState");
  params.AddMember("inputResponses", responses, alloc);
  if (!round.request_state.empty()) {
    rapidjson::Document state(&alloc);
    state.Parse(round.request_state.c_str(), round.request_state.size());
    if (!state.HasParseError()) params.AddMember("requestState", rapidjson::Value(state, alloc), alloc);
  }
  return sdk::to_json(params);
}

absl::StatusOr<std::string> request_with_rounds(connection& conn, std::string_view method, std::string params_json,
                                                std::chrono::milliseconds timeout,
                                                const std::shared_ptr<cancel_flag>& cancel, const input_fn& input) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int round = 1;; ++round) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError("the upstream did not finish " + std::string(method) + " within " +
                                         std::to_string(timeout.count()) + " ms");
    }
    auto answer = conn.request(method, params_json, left, cancel);
    if (!answer.ok()) return answer;
    auto asked = read_input_round(*answer);
    if (!asked.ok()) return asked.status();
    if (!*asked) return answer;
    std::string methods;
    for (const auto& q : (*asked)->requests) methods += (methods.empty() ? "" : ", ") + q.method;
    if (!input) {
      return absl::FailedPreconditionError("the upstream asks for input (" + methods + ") to answer " +
                                           std::string(method) + ", which cannot be passed on here");
    }
    if (round > kMaxInputRounds) {
      return absl::ResourceExhaustedError("the upstream still asked for input (" + methods + ") after " +
                                          std::to_string(kMaxInputRounds) + " rounds of answers to " +
                                          std::string(method) + "; giving up");
    }
    if (cancel != nullptr && cancel->cancelled()) return absl::CancelledError(cancel->reason());
    auto answers = answer_round(**asked, input);
    if (!answers.ok()) return answers.status();
    params_json = retry_params(params_json, *answers, **asked);
  }
}

}  // namespace toolhost::mcp_client
