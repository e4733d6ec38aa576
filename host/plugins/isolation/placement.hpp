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

struct placement {
  config::isolation isolation = config::isolation::none;
  std::string group;             // isolated: the group's name (the plugin id unless `group` is set)
  uint32_t memory_limit_mb = 0;  // isolated: the limit of its process
  std::string decided_by;        // "servers.S.plugin_options.P.isolation", "servers.S.isolation" or "default"
};

placement place(const config::server& server, std::string_view plugin);

}  // namespace toolhost::plugins::isolation
