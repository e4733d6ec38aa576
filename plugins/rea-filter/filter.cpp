#include "filter.hpp"

#include <algorithm>

namespace toolhost::rea_filter {
namespace {

bool is_tool_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

// Tools that move Hopper's window rather than write to the file.
bool moves_window(std::string_view tool) { return tool == "goto_address" || tool == "set_current_document"; }

// REA's tools that write names, comments, bookmarks or code types into the analysis.
bool writes_project(std::string_view tool) {
  return tool == "set_address_name" || tool == "set_addresses_names" || tool == "set_comment" ||
         tool == "set_inline_comment" || tool == "set_bookmark" || tool == "unset_bookmark" || tool == "set_code_type";
}

}  // namespace

std::string use_instead_message(std::string_view tool, std::string_view instead) {
  std::string why;
  if (moves_window(tool)) {
    why = ": it would move the analysis window behind Eleven's back";
  } else if (writes_project(tool)) {
    why = ": it would change names, comments or bookmarks behind the project's back";
  }
  return std::string(tool) + " is not available here" + why + ". Use the `eleven` server's `" + std::string(instead) +
         "` tool instead.";
}

tool_filter tool_filter::eleven_rea() {
  tool_filter f;
  // The Eleven documentation's table, plus the two window movers (which `open_function`
  // replaces, since it shows a function to the user).
  f.deny("set_address_name", "rename_function");
  f.deny("set_addresses_names", "rename_function");
  f.deny("set_comment", "add_comment");
  f.deny("set_inline_comment", "add_comment");
  f.deny("set_bookmark", "bookmark");
  f.deny("unset_bookmark", "bookmark");
  f.deny("set_code_type", "set_code_type");
  f.deny("goto_address", "open_function");
  f.deny("set_current_document", "open_function");
  return f;
}

void tool_filter::deny(std::string tool, std::string_view use_instead) {
  std::string text;
  if (use_instead.empty()) {
    text = tool + " is turned off for this server by its configuration.";
  } else if (is_tool_name(use_instead)) {
    text = use_instead_message(tool, use_instead);
  } else {
    text = std::string(use_instead);
  }
  refusals_[std::move(tool)] = std::move(text);
}

std::optional<std::string> tool_filter::refusal(std::string_view tool) const {
  auto it = refusals_.find(std::string(tool));
  if (it == refusals_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> tool_filter::denied() const {
  std::vector<std::string> out;
  for (const auto& [name, text] : refusals_) out.push_back(name);
  return out;
}

}  // namespace toolhost::rea_filter
