// The proxy: one upstream MCP server re-exposed through the host's provider interface, with
// the write filter in front of its tools. Everything here is [any-thread].
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <toolhost/plugin.h>
#include <toolhost/mcp_client/client.hpp>

#include "settings.hpp"

namespace toolhost::rea_filter {

// What the proxy needs from the host, as plain functions so tests can stand in for it.
struct host_hooks {
  std::function<void(uint32_t lists)> list_changed;  // TOOLHOST_LIST_* mask
  std::function<void(const std::string& uri)> resource_updated;
  std::function<void(toolhost_log_level_t, const char* logger, const std::string& data_json)> client_log;
  std::function<void(toolhost_log_level_t, const std::string& message)> host_log;
  // The first start ended (the upstream's instructions are known, or known to be absent).
  std::function<void()> instructions_known;
};

class proxy {
 public:
  proxy(proxy_settings settings, host_hooks hooks);
  ~proxy();
  proxy(const proxy&) = delete;
  proxy& operator=(const proxy&) = delete;

  // Starts the upstream and loads its lists on a thread of its own, so that instructions and
  // lists are ready by the time a client asks, while init stays quick; calls
  // hooks.instructions_known when that first start ends.
  void start_in_background();
  // Stops the background thread and the upstream.
  void shutdown();

  // The provider's callbacks (toolhost_provider_desc_t), JSON in and out.
  std::string list_tools();
  std::string list_resources();
  std::string list_resource_templates();
  std::string list_prompts();
  std::string instructions();
  // Returns false when the tool is neither the upstream's nor denied.
  bool call_tool(const toolhost_call_t* call, std::string_view name, std::string_view arguments, std::string* result);
  toolhost_status_t read_resource(const toolhost_call_t* call, std::string_view uri, std::string* result);
  toolhost_status_t get_prompt(const toolhost_call_t* call, std::string_view name, std::string_view arguments,
                               std::string* result);
  bool complete(std::string_view ref_json, std::string_view argument, std::string_view value,
                std::string_view context_json, std::string* result);

  // Starts the upstream and loads its lists now, on this thread (check-config): the reason when
  // it cannot.
  absl::Status start_and_check();

  // For tests: the upstream's process id (0 when not running).
  int upstream_pid() const { return client_.pid(); }

 private:
  struct active_call {
    const toolhost_call_t* call;
    int borrowed = 0;  // server->client requests using `call` right now
  };

  // Loads the lists in `mask` (TOOLHOST_LIST_*) from the upstream into the caches.
  absl::Status refresh(uint32_t mask);
  // Makes sure the first load happened (waits for the background one).
  void ensure_loaded();
  void on_notification(const std::string& method, const std::string& params);
  absl::StatusOr<std::string> on_request(const std::string& method, const std::string& params);
  // Passes a question of the upstream's to the client through `call` (the plugin ABI's
  // client_request), bounded by the call's timeout; the answer, or an error the upstream can read.
  absl::StatusOr<std::string> ask_client(const toolhost_call_t* call, const std::string& method,
                                         const std::string& params);
  // Answers a 2026-07-28 upstream's input-required questions through `call`.
  toolhost::mcp_client::input_fn input_for(const toolhost_call_t* call);
  void refresher_loop();
  std::string upstream_error_text(std::string_view tool, const absl::Status& status) const;
  // The sentence for the agent while the last start failed (instructions, calls); "" otherwise.
  std::string start_failure() const;

  proxy_settings settings_;
  host_hooks hooks_;
  toolhost::mcp_client::client client_;

  std::mutex load_mutex_;  // held while loading, so list callers wait for the first load
  bool loaded_ = false;

  mutable std::mutex cache_mutex_;
  std::string tools_json_ = "[]";
  std::set<std::string> tool_names_;  // the upstream's tools that pass the filter
  std::string start_error_;           // why the last start failed; "" after a good one
  std::string resources_json_ = "[]";
  std::string templates_json_ = "[]";
  std::string prompts_json_ = "[]";

  std::mutex calls_mutex_;
  std::condition_variable calls_changed_;
  std::list<active_call> calls_;

  std::mutex refresh_mutex_;
  std::condition_variable refresh_wanted_;
  uint32_t refresh_mask_ = 0;
  bool stopping_ = false;
  std::thread starter_;
  std::thread refresher_;
};

}  // namespace toolhost::rea_filter
