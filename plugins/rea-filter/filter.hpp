// The write filter: which upstream tools a server hides, and what calling one says instead.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>
#include <rapidjson/document.h>

namespace toolhost::rea_filter {

class tool_filter {
 public:
  // No tool denied.
  tool_filter() = default;

  // REA's writes and window moves, each pointing at the `eleven` tool to use instead (the
  // eleven-rea table of the Eleven documentation).
  static tool_filter eleven_rea();

  // Denies `tool`. `use_instead` is either the name of the `eleven` tool to use (a bare tool
  // name) or a whole sentence said verbatim; empty says only that the tool is turned off.
  void deny(std::string tool, std::string_view use_instead);

  bool denies(std::string_view tool) const { return refusals_.count(std::string(tool)) != 0; }
  // The error a call of a denied tool answers with; nullopt when `tool` passes.
  std::optional<std::string> refusal(std::string_view tool) const;
  // The denied names, sorted.
  std::vector<std::string> denied() const;

 private:
  std::map<std::string, std::string> refusals_;
};

// The sentence for a denied tool whose replacement is the `eleven` tool `instead`.
std::string use_instead_message(std::string_view tool, std::string_view instead);

}  // namespace toolhost::rea_filter
