#include "host/plugins/isolation/placement.hpp"

#include <cstdlib>

#include <toolhost/sdk/strings.hpp>

namespace toolhost::plugins::isolation {

placement place(const config::server& server, std::string_view plugin) {
  placement p;
  const config::plugin_run_options* options = nullptr;
  if (auto it = server.plugin_options.find(plugin); it != server.plugin_options.end()) options = &it->second;
  if (options != nullptr && options->isolation) {
    p.isolation = *options->isolation;
    p.decided_by = cat("servers.", server.name, ".plugin_options.", plugin, ".isolation");
  } else if (options != nullptr && !options->group.empty()) {
    p.isolation = config::isolation::process;  // a group is a process
    p.decided_by = cat("servers.", server.name, ".plugin_options.", plugin, ".group");
  } else if (server.isolation) {
    p.isolation = *server.isolation;
    p.decided_by = cat("servers.", server.name, ".isolation");
  } else if (const char* forced = std::getenv(kForceVariable);
             forced != nullptr && std::string_view(forced) == "process") {
    p.isolation = config::isolation::process;
    p.decided_by = kForceVariable;
  } else {
    p.isolation = config::isolation::none;
    p.decided_by = "default";
  }
  if (p.isolation == config::isolation::none) return p;
  p.group = options != nullptr && !options->group.empty() ? options->group : std::string(plugin);
  // Forced, the plugins of a server share one process: which of them share transports is known
  // only once they run, and together they always can.
  if (p.decided_by == kForceVariable) p.group = kForcedGroup;
  p.memory_limit_mb = options != nullptr && options->memory_limit_mb != 0 ? options->memory_limit_mb
                      : server.memory_limit_mb != 0                       ? server.memory_limit_mb
                                                                          : kDefaultMemoryLimitMb;
  return p;
}

}  // namespace toolhost::plugins::isolation
