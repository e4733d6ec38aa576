// Test helper: a debugger tool's result as the text, error flag and structured content an MCP
// client receives.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/result.hpp>

namespace toolhost::testing {

struct answer {
  std::string text;
  bool error = false;
  std::string structured;
};

inline answer unpack(const toolhost::sdk::result& r) {
  auto doc = toolhost::sdk::parse_json(r.to_json());
  answer a;
  REQUIRE(doc);
  for (const auto& block : (*doc)["content"].GetArray()) a.text += block["text"].GetString();
  a.error = r.is_error();
  if (const auto* s = toolhost::sdk::member(*doc, "structuredContent")) a.structured = toolhost::sdk::to_json(*s);
  return a;
}

// The `[target ...]` line that ends every command result.
inline std::string trailer(const answer& a) { return a.text.substr(a.text.rfind("\n[target") + 1); }

}  // namespace toolhost::testing
