// Permission rows: whether a tool call may run, by the setting of its permission kind
// (allow / ask / never). "ask" asks the person through the client (MCP elicitation) and goes
// on only on an explicit accept; a client that cannot be asked means refusal. Tools that only
// file a suggestion never ask. Every decision is logged to stderr with the tool.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "host/config/config.hpp"
#include "host/policy/approval.hpp"

namespace toolhost::policy {

struct tool_request {
  std::string_view tool;
  std::string_view server;
  std::string_view kind_id;
  std::string_view kind_label;
  config::permission setting;              // the effective setting of the kind
  bool files_suggestion;                   // TOOLHOST_TOOL_SUGGESTION, or REVIEWABLE while review is on
  std::string_view config_path;            // the files that set the row, for the remedy in messages
  std::string_view arguments_json = "{}";  // shown in the question
  bool allowed_for_session = false;        // the person answered "allow for this session" before
};

// Asks the person `message` with the form `schema_json` (approval.hpp); nullopt when the client
// cannot be asked.
using ask_fn = std::function<std::optional<answer>(const std::string& message, const std::string& schema_json)>;

struct decision {
  bool allowed = false;
  std::string message;                // for a refusal: a sentence for the model, naming the row and the remedy
  bool remember_for_session = false;  // allowed with "allow for this session": do not ask again
};

// Decides, asking through `ask` when the setting is "ask".
decision authorize(const tool_request& request, const ask_fn& ask);

}  // namespace toolhost::policy
