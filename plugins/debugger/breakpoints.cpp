#include "breakpoints.hpp"

#include <algorithm>
#include <sstream>

namespace toolhost::debugger {

std::optional<std::vector<int>> parse_id_list(const std::string& text, const std::vector<breakpoint>& existing,
                                              std::string& error) {
  std::vector<int> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    if (word == "*") {
      for (const auto& b : existing) ids.push_back(b.id);
      continue;
    }
    // Ids are hexadecimal in WinDbg, like every number; "1-3" is a range.
    const auto dash = word.find('-');
    try {
      size_t used = 0;
      const int first = std::stoi(word.substr(0, dash), &used, 16);
      if (used != (dash == std::string::npos ? word.size() : dash)) throw std::invalid_argument(word);
      int last = first;
      if (dash != std::string::npos) {
        last = std::stoi(word.substr(dash + 1), &used, 16);
        if (used != word.size() - dash - 1) throw std::invalid_argument(word);
      }
      for (int id = first; id <= last; ++id) {
        if (std::any_of(existing.begin(), existing.end(), [&](const breakpoint& b) { return b.id == id; })) {
          ids.push_back(id);
        } else if (dash == std::string::npos) {
          error = "there is no breakpoint " + std::to_string(id) + " (bl lists them)";
          return std::nullopt;
        }
      }
    } catch (const std::exception&) {
      error = "'" + word + "' is not a breakpoint id, a range like 1-3, or *";
      return std::nullopt;
    }
  }
  if (ids.empty() && error.empty()) {
    error = "name the breakpoints: ids, a range like 1-3, or *";
    return std::nullopt;
  }
  return ids;
}

}  // namespace toolhost::debugger
