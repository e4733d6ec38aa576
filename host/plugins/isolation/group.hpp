// One isolated group as the parent's registry sees it: the child process, and a proxy for every
// tool, resource and prompt its plugins registered, whose functions forward to the child.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/plugins/isolation/child_process.hpp"
#include "host/plugins/isolation/snapshot.hpp"
#include "host/plugins/registry.hpp"

namespace toolhost::plugins::isolation {

// What the child is told to start (the start frame's JSON).
struct start_plan {
  std::string server, config_dir;
  std::vector<std::string> dirs;
  bool listing = false, checking = false;
  uint32_t memory_limit_mb = 0;
  struct plugin {
    std::string id, settings;
    config::settings_origin origin;
  };
  std::vector<plugin> plugins;
};
std::string start_json(const start_plan& plan);

class group {
 public:
  group(std::string name, const start_plan& plan, host_events& events);

  // Starts the child and adds proxies for what each plugin registered to `reg`. Returns how each
  // plugin of the group started (a plugin whose registrations the parent refuses, a duplicate
  // tool name say, did not start).
  std::vector<plugin_outcome> start(registry& reg);
  void stop() { process_.stop(); }

  const std::string& name() const { return process_.spec().name; }
  const std::vector<std::string>& plugins() const { return process_.spec().plugins; }
  child_process& process() { return process_; }
  // The transports its plugins registered: usable only inside the child.
  const std::vector<transport>& transports() const { return transports_; }

  struct proxy {
    child_process* process;
    std::string plugin;        // owner
    std::string key;           // tool or prompt name, resource URI or template
    std::string complete_key;  // "resource:URI" or "prompt:NAME", for completions
  };
  struct provider_proxy {
    child_process* process;
    std::string plugin;
    std::string index;  // the provider's index among the child's, as text
  };

 private:
  child_process process_;
  std::deque<proxy> proxies_;  // stable addresses: the registry holds pointers to them
  std::deque<provider_proxy> provider_proxies_;
  std::vector<transport> transports_;
};

}  // namespace toolhost::plugins::isolation
