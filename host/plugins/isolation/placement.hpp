// Where each plugin of a server runs (DESIGN.md, "Groups" and "The default"): in process, or in
// which isolated group, decided from the configuration alone, before anything is loaded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "host/config/config.hpp"

namespace toolhost::plugins::isolation {

// An isolated process may allocate this much unless memory_limit_mb says otherwise.
inline constexpr uint32_t kDefaultMemoryLimitMb = 4096;

// TOOLHOST_ISOLATION=process runs every plugin the configuration does not place in a child
// process (the test suite's isolated pass), all plugins of a server in one group.
inline constexpr const char* kForceVariable = "TOOLHOST_ISOLATION";
inline constexpr const char* kForcedGroup = "isolated";

struct placement {
  config::isolation isolation = config::isolation::none;
  std::string group;             // isolated: the group's name (the plugin id unless `group` is set)
  uint32_t memory_limit_mb = 0;  // isolated: the limit of its process
  std::string
      decided_by;  // "servers.S.plugin_options.P.isolation", "servers.S.isolation", TOOLHOST_ISOLATION or "default"
};

placement place(const config::server& server, std::string_view plugin);

}  // namespace toolhost::plugins::isolation
