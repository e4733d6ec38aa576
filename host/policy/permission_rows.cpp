#include "host/policy/permission_rows.hpp"

#include <algorithm>

#include <absl/strings/str_join.h>
#include <toolhost/sdk/strings.hpp>

#include "host/suggest.hpp"

namespace toolhost::policy {
namespace {

std::string_view prefix_of(std::string_view id) { return id.substr(0, id.find('.')); }

}  // namespace

std::vector<row_problem> unknown_rows(const config::permission_rows& rows, const known_kinds& known) {
  std::vector<row_problem> out;
  for (const auto& entry : rows) {
    const std::string& kind = entry.first;
    const config::permission_row& row = entry.second;
    if (std::find(known.ids.begin(), known.ids.end(), kind) != known.ids.end()) continue;
    const std::string guess = closest(kind, known.ids);
    const bool same_prefix = kind.find('.') != std::string::npos &&
                             std::any_of(known.ids.begin(), known.ids.end(), [&](const std::string& id) {
                               return id.find('.') != std::string::npos && prefix_of(id) == prefix_of(kind);
                             });
    if (known.rows_may_belong_elsewhere && guess.empty() && !same_prefix) continue;
    row_problem p;
    p.source = row.source;
    p.message = cat(row.source, ": permission kind \"", kind, "\" is not registered by any plugin of ", known.scope);
    if (!guess.empty()) {
      append(p.message, "; did you mean \"", guess, "\"?");
    } else if (!known.not_started.empty() && !same_prefix) {
      // It may be one of theirs: only a warning, next to the failure that explains it.
      p.error = false;
      const bool one = known.not_started.size() == 1;
      append(p.message, " (", one ? "plugin " : "plugins ", absl::StrJoin(known.not_started, ", "),
             " did not start, so ", one ? "its" : "their", " kinds are unknown)");
    } else {
      append(p.message, " (`toolhost plugins` lists the kinds each plugin registers).");
    }
    if (p.error) append(p.message, " A row that names no kind changes nothing: fix it or remove it.");
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace toolhost::policy
