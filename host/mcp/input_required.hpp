// 2026-07-28 input-required results (MRTR): a question the host or a plugin asks during a request
// (a permission row set to `ask`, a plugin's elicit, sampling or roots) does not become a request
// to the client. The call ends with an InputRequiredResult naming each question under a key, and
// the client calls again with the answers under the same keys. The host runs the call again from
// the start and answers the questions from them: the plugin ABI does not change.
//
// Between rounds the host keeps nothing: what it needs travels in `requestState`, sealed with an
// HMAC-SHA256 under a key made at start (so a state from another process, or one the client
// changed, is refused) and bound to the call (server, method, name and arguments: an approval
// for one call cannot be used for another). It holds the keys asked (only answers to those are
// read), the answers of earlier rounds (a later round need not send them again), an expiry
// (10 minutes) and a nonce: each state is good for one round. Expiry and binding bound a replay
// but do not stop it, and a state that carries the person's approval of a call must not run the
// call again, so the nonces of redeemed states are held (bounded) until they expire: the one
// thing the host keeps. [any thread]
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>
#include <rapidjson/document.h>

namespace toolhost::mcp::input_required {

// Answers by key: the JSON text of each result the client gave.
using answers = std::map<std::string, std::string, std::less<>>;

// What one call is bound to. `arguments_json` is compact JSON.
std::string binding(std::string_view server, std::string_view method, std::string_view name,
                    std::string_view arguments_json);

// The requestState for the questions `asked` (keys), carrying `given` (answers so far).
std::string seal(std::string_view binding, const std::vector<std::string>& asked, const answers& given);

// Checks `state` against `binding`, redeems it (a second open of it is refused), and returns the
// answers it carries plus those of
// `input_responses` (the request's inputResponses, may be null) to the keys it asked. Extra keys
// and answers that are not objects are left out (the question is asked again). An error says
// why the state was refused.
absl::StatusOr<answers> open(std::string_view state, std::string_view binding, const rapidjson::Value* input_responses);

// The InputRequiredResult: `requests` are (key, {"method","params"} JSON) in the order asked.
std::string result(const std::vector<std::pair<std::string, std::string>>& requests, std::string_view state);

// A question's own key, when its params name one in _meta ("io.toolhost/inputKey"); the key is
// taken out of `params_json` (the client sees only the question). Empty when there is none.
std::string take_key(std::string& params_json);

}  // namespace toolhost::mcp::input_required
