// One named MCP server from the config: its plugins (loaded in the background so that
// `initialize` never waits on them), what they registered, its policy, and the sessions of the
// clients connected to it (for notifications the plugins raise).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host/config/config.hpp"
#include "host/mcp/catalog.hpp"
#include "host/mcp/deadlines.hpp"
#include "host/mcp/tasks.hpp"
#include "host/mcp/worker_pool.hpp"
#include "host/plugins/instance.hpp"
#include "host/plugins/isolation/group.hpp"
#include "host/plugins/loader.hpp"
#include "host/plugins/registry.hpp"
#include "host/policy/permission_rows.hpp"

namespace toolhost::mcp {

class session;

class server final : public plugins::host_events {
 public:
  server(const config::config& cfg, const config::server& settings, plugins::loader& loader);
  ~server() override;
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Loads and initializes the server's plugins on a background thread.
  void start_loading();
  // Loads them on this thread (for `toolhost plugins` and tests).
  void load_now();
  // Waits until loading finished; false on timeout.
  bool wait_ready(std::chrono::milliseconds timeout) const;
  void wait_ready() const;
  bool ready() const { return ready_.load(); }

  // Runs every plugin's deinit (reverse order). Call only when no call is running.
  void shutdown();

  const config::config& global() const { return global_; }
  const config::server& settings() const { return settings_; }
  const std::string& name() const { return settings_.name; }
  plugins::registry& registry() { return registry_; }
  // Which plugin serves each name, and the lists clients page through.
  mcp::catalog& catalog() { return catalog_; }
  const std::vector<std::unique_ptr<plugins::instance>>& instances() const { return instances_; }
  // The isolated groups, each a child process with its plugins.
  const std::vector<std::unique_ptr<plugins::isolation::group>>& groups() const { return groups_; }
  worker_pool& workers() { return workers_; }
  mcp::deadlines& deadlines() { return deadlines_; }
  // Tool calls running or finished as tasks, for every client of this server.
  task_store& tasks() { return tasks_; }
  const std::string& home() const { return home_; }

  // The effective setting of a permission kind in this server.
  config::permission permission_of(const plugins::permission_kind& kind) const;

  // Server instructions: what the plugins registered plus what providers offer now, after
  // waiting (bounded by each provider's instructions_wait_ms) for late ones to be announced, and
  // which plugins did not start.
  std::string instructions() const;

  // A plugin of this server that did not start (not found, refused by the loader, bad settings,
  // init failed), with the sentence that says why. The agent is told through the instructions
  // and through the error of a call to a tool nobody serves.
  struct failed_plugin {
    std::string id;
    std::string message;
  };
  std::vector<failed_plugin> failed_plugins() const;
  // "Plugin 'a' did not start, so its tools are missing: why. ...", or "" when all started.
  std::string failed_plugins_text() const;

  // What the configuration gets wrong that only the plugins' registrations reveal (a permission
  // row naming no kind, settings for a tool nobody serves), known once loading finished.
  // Errors refuse every tool call with config_error(): a typo in a row meant to refuse a tool
  // must not leave it allowed. Warnings are logged only.
  const std::vector<policy::row_problem>& config_problems() const { return config_problems_; }
  const std::string& config_error() const { return config_error_; }
  // This server is the only one the process serves, so --allow/--deny/--ask rows must name its
  // kinds (with several, each row belongs to one of them). Call before loading.
  void set_serves_alone(bool alone) { serves_alone_ = alone; }
  // The plugins of this server that did not start (not found, not trusted, init failed...).
  std::vector<std::string> plugins_not_started() const;

  void attach(session* s);
  void detach(session* s);

  // plugins::host_events
  void list_changed(std::string_view plugin, uint32_t lists) override;
  void resource_updated(std::string_view uri) override;
  void log(toolhost_log_level_t level, std::string_view logger, std::string_view data_json) override;

 private:
  void load();
  // Starts the isolated group `name` with every plugin of the server placed in it.
  void start_group(const std::string& group_name, uint32_t memory_limit_mb);
  // Transports are function tables: refuses a server whose plugins that register them run apart
  // from its other plugins.
  void check_transports();
  void check_config();
  void wait_for_late_instructions() const;
  template <class F>
  void for_each_session(F&& fn);

  const config::config& global_;
  const config::server& settings_;
  plugins::loader& loader_;
  plugins::registry registry_;
  std::vector<std::unique_ptr<plugins::instance>> instances_;
  std::vector<std::unique_ptr<plugins::isolation::group>> groups_;
  std::string transport_error_;        // set by check_transports
  std::vector<failed_plugin> failed_;  // guarded by ready_mutex_
  std::string home_;
  std::vector<policy::row_problem> config_problems_;
  std::string config_error_;
  bool serves_alone_ = false;

  std::atomic<bool> ready_{false};
  mutable std::mutex ready_mutex_;
  mutable std::condition_variable ready_cv_;
  std::thread loader_thread_;

  std::mutex sessions_mutex_;
  std::vector<session*> sessions_;

  // Plugins whose providers announced their late instructions (TOOLHOST_LIST_INSTRUCTIONS).
  mutable std::mutex instructions_mutex_;
  mutable std::condition_variable instructions_known_cv_;
  std::set<std::string, std::less<>> instructions_known_;

  mcp::catalog catalog_;

  worker_pool workers_;
  mcp::deadlines deadlines_;
  task_store tasks_;
  bool shut_down_ = false;
};

}  // namespace toolhost::mcp
