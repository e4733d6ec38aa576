// What a child's plugins registered, as the one JSON document the child sends when it is ready
// (DESIGN.md), and its reading on the parent's side.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

#include "host/plugins/registry.hpp"

namespace toolhost::plugins::isolation {

// How one plugin of the group started.
struct plugin_outcome {
  std::string id;
  bool started = false;
  std::string status;   // load_status text when it did not start
  std::string message;  // the sentence that says why
};

// The child's side: everything in `reg`, with each plugin's outcome.
std::string snapshot_of(const registry& reg, const std::vector<plugin_outcome>& outcomes);

struct snapshot {
  std::vector<plugin_outcome> outcomes;
  std::vector<permission_kind> kinds;
  std::vector<tool> tools;               // call and user_data unset
  std::vector<resource> resources;       // read, complete and user_data unset
  std::vector<bool> resource_completes;  // by index in resources: it has a complete function
  std::vector<prompt> prompts;           // get, complete and user_data unset
  std::vector<bool> prompt_completes;
  std::vector<std::pair<std::string, std::string>> instructions;  // owner, text
  std::vector<transport> transports;                              // factory unset
  struct provider_info {
    std::string owner;
    uint32_t callbacks = 0;  // provider_callbacks() of the child's provider
    uint32_t instructions_wait_ms = 0;
  };
  std::vector<provider_info> providers;  // in the child's registration order
};

// A provider's callbacks as bits, in toolhost_provider_desc_t order (list_tools = bit 0).
uint32_t provider_callbacks(const toolhost_provider_desc_t& d);

// The parent's side; an error names what is malformed.
absl::StatusOr<snapshot> read_snapshot(std::string_view json);

}  // namespace toolhost::plugins::isolation
