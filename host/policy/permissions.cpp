#include "host/policy/permissions.hpp"

#include <absl/strings/str_cat.h>
#include <toolhost/sdk/strings.hpp>

#include <toolhost/sdk/json.hpp>

#include "host/log.hpp"
#include "host/policy/approval.hpp"

namespace toolhost::policy {
namespace {

std::string where_to_change(const tool_request& r) {
  return cat("set \"", r.kind_id, "\" in the [permissions] table of ",
             r.config_path.empty() ? "the toolhost config" : r.config_path, ", or start toolhost with --allow ",
             r.kind_id, " for one run");
}

// Refusals and what the person answered are what a user looks for in the log, at info. A call
// its row allows outright is routine, at debug: at info, every call of a busy tool was a line on
// stderr, a formatted write per call (bench/mcp's echo: 3,500 lines in a second).
decision logged(const tool_request& r, decision d, std::string_view how, log::level level = log::level::info) {
  if (level < log::current_level()) return d;
  log::write(level, "permissions",
             cat(d.allowed ? "allowed " : "refused ", r.tool, " (", r.kind_label, ", ", how, ") in server ", r.server));
  return d;
}

}  // namespace

decision authorize(const tool_request& r, const ask_fn& ask) {
  switch (r.setting) {
    case config::permission::allow: return logged(r, {true, ""}, "allow", log::level::debug);
    case config::permission::never:
      return logged(
          r,
          {false, cat("The tool ", r.tool, " is not allowed: the permission row \"", r.kind_label,
                      "\" is set to Never. Ask the user to change it if they want this (", where_to_change(r), ").")},
          "never");
    case config::permission::ask: break;
  }
  if (r.files_suggestion) return logged(r, {true, ""}, "files a suggestion, not asked");
  if (r.allowed_for_session) return logged(r, {true, ""}, "ask: allowed for this session");

  const std::string message =
      cat("Allow ", describe_call(r.tool, r.arguments_json), "?\n(", r.kind_label, "; server ", r.server, ")");
  std::optional<answer> a = ask(message, approval_schema(r.kind_label, /*offer_session=*/true));
  if (!a) {
    return logged(r,
                  {false, cat("The tool ", r.tool, " needs the user's approval (the permission row \"", r.kind_label,
                              "\" is set to Ask), but this client cannot ask the user. ", "Ask the user to allow it (",
                              where_to_change(r), " to \"allow\") or to use a client that supports elicitation.")},
                  "ask: client cannot be asked");
  }
  if (a->pending) {
    log::info("permissions", cat("asked about ", r.tool, " (", r.kind_label, ") in server ", r.server,
                                 "; the answer comes with the client's next round"));
    return {false, cat("The tool ", r.tool, " waits for the user's answer.")};
  }
  if (a->action == "accept" && a->approved && a->for_session) {
    return logged(r, {true, "", true}, "ask: accepted for this session");
  }
  if (a->action == "accept" && a->approved) return logged(r, {true, ""}, "ask: accepted");
  const std::string how = a->action == "accept" ? "accepted without approving" : a->action;
  return logged(r,
                {false, cat("The user did not allow ", r.tool, " (permission row \"", r.kind_label, "\"; answer: ", how,
                            "). Do not retry it unless the user asks you to.")},
                cat("ask: ", how));
}

}  // namespace toolhost::policy
