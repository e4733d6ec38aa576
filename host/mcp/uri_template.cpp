#include "host/mcp/uri_template.hpp"

namespace toolhost::mcp {

bool uri_template_matches(std::string_view t, std::string_view uri) {
  size_t ti = 0;
  size_t ui = 0;
  while (ti < t.size()) {
    if (t[ti] == '{') {
      const size_t close = t.find('}', ti);
      if (close == std::string_view::npos) return false;
      ti = close + 1;
      // A variable takes characters up to the next '/' or up to the template's next literal.
      const char stop = ti < t.size() ? t[ti] : '\0';
      const size_t start = ui;
      while (ui < uri.size() && uri[ui] != '/' && (stop == '\0' || uri[ui] != stop)) ++ui;
      if (ui == start) return false;
      continue;
    }
    if (ui >= uri.size() || t[ti] != uri[ui]) return false;
    ++ti;
    ++ui;
  }
  return ui == uri.size();
}

}  // namespace toolhost::mcp
