// Permission rows that name no permission kind: a typo such as "example.cuont" = "never" would
// otherwise leave the tool allowed while the person believes it refused. Rows are checked
// against the kinds the plugins registered, once they have (check-config, and each server when
// its plugins are loaded).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "host/config/config.hpp"

namespace toolhost::policy {

// What rows are checked against.
struct known_kinds {
  std::vector<std::string> ids;          // every registered kind, the built-in "run" included
  std::vector<std::string> not_started;  // plugins that did not start, whose kinds are unknown
  std::string scope;                     // who registered `ids`, for messages: "server 'example'"
  // The rows may also be meant for plugins outside this scope (the global [permissions] table,
  // checked while serving one server): a row is then refused only when it is a near miss of a
  // kind here (closest name, or the same prefix before the first '.').
  bool rows_may_belong_elsewhere = false;
};

struct row_problem {
  std::string source;   // where the row is: "file:line:column", or the flag as typed
  std::string message;  // "file:line:column: ..." naming the row, the likely kind and the remedy
  bool error = true;    // false: only a warning, since a plugin that did not start may own it
};

// The rows of `rows` that name no kind of `known`.
std::vector<row_problem> unknown_rows(const config::permission_rows& rows, const known_kinds& known);

}  // namespace toolhost::policy
