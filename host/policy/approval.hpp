// The one form every question to the person uses: a permission row set to "ask", and "send a
// whole file?". The question travels as an MCP elicitation (form mode) with one required
// boolean, "approve"; only "accept" with approve=true is a yes. Whatever asks (a 2025-era server
// request today, an input-required result in 2026-07-28) builds the request and reads the answer
// here, so a change to the question (its wording, the tool's arguments, an "allow for this
// session" answer) is made once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace toolhost::policy {

// The person's answer to a question: "accept" (with `approved` from the form), "decline",
// "cancel"; nullopt from an asker means the client cannot be asked.
struct answer {
  std::string action;
  bool approved = false;
  bool for_session = false;  // approved, and "allow for this session" was ticked too
  // 2026-07-28: the question went out in an input-required result; the answer comes with the
  // client's next round, so this run neither runs the call nor counts as a refusal.
  bool pending = false;
};

// The form's JSON schema; `label` names the permission row. With `offer_session`, a second
// checkbox, "Allow for this session", lets the person stop the same row from asking again until
// the client disconnects.
std::string approval_schema(std::string_view label, bool offer_session = false);

// What a call is about, in one short line for the question: its tool and arguments, like
// "rename_function main → real_main" (a new_* argument and the one it replaces) or
// "propose_patch address: 0x401000, bytes: 90 90". Long values are cut, line breaks flattened.
std::string describe_call(std::string_view tool, std::string_view arguments_json);

// The params of the elicitation/create request that asks `message` with the form `schema_json`.
std::string approval_request(std::string_view message, std::string_view schema_json);

// Reads the client's elicitation result. A failed request (`ok` false: an error answer, a
// timeout, a cancelled call) is a "cancel": never a yes.
answer read_approval(bool ok, std::string_view result_json);

}  // namespace toolhost::policy
