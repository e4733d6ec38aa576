// 2026-07-28 input-required results from the upstream: a tools/call (or prompts/get,
// resources/read) may end with {"resultType":"input_required","inputRequests":{KEY:{method,
// params}},"requestState":...} instead of its result. Each request is answered (elicitation,
// sampling, roots: by whoever stands behind this client) and the same request is sent again with
// `inputResponses` {KEY: result} and the upstream's `requestState` unchanged (it is the
// upstream's, sealed or not: we never read it), until a complete result comes, for at most
// kMaxInputRounds rounds.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/mcp_client/connection.hpp>

namespace toolhost::mcp_client {

// An upstream that keeps asking is broken or looping; a person answers a few questions at most.
inline constexpr int kMaxInputRounds = 8;

// One question of an InputRequiredResult.
struct input_request {
  std::string key;     // the upstream's name for it, which its answer must carry
  std::string method;  // "elicitation/create", "sampling/createMessage", "roots/list"
  std::string params;  // JSON object
};

struct input_round {
  std::vector<input_request> requests;  // in the order the upstream listed them
  std::string request_state;            // JSON text of requestState (absent: empty)
};

// Answers one question: the result JSON, or an error that ends the call.
using input_fn = std::function<absl::StatusOr<std::string>(const input_request& question)>;

// The round `result_json` asks for; nullopt when it is not an input-required result. An error
// names what is malformed about one that is.
absl::StatusOr<std::optional<input_round>> read_input_round(std::string_view result_json);

// Answers every request of `round` through `answer`, all of them even after one failed (so that
// whoever answers sees every question at once); the answers by key, or the first failure.
absl::StatusOr<std::map<std::string, std::string>> answer_round(const input_round& round, const input_fn& answer);

// `params_json` with this round's inputResponses and requestState in place of earlier ones.
std::string retry_params(std::string_view params_json, const std::map<std::string, std::string>& answers,
                         const input_round& round);

// Sends the request on `conn` and, while the upstream answers input_required, answers the round
// through `input` and sends it again: the complete result, or the first error (the upstream's,
// an answer's, `timeout` passed over all rounds with the person's answers included, Cancelled,
// more than kMaxInputRounds rounds, or a round with no `input` to answer it).
absl::StatusOr<std::string> request_with_rounds(connection& conn, std::string_view method, std::string params_json,
                                                std::chrono::milliseconds timeout,
                                                const std::shared_ptr<cancel_flag>& cancel, const input_fn& input);

}  // namespace toolhost::mcp_client
