// The debugger's MCP tools (command, open, close, output) over one session slot. Kept apart
// from the plugin entry so tests can drive it with any factory lookup.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <toolhost/debug_target.h>
#include <toolhost/sdk/result.hpp>

#include "output_store.hpp"
#include "session.hpp"

namespace toolhost::debugger {

// Finds the factory a backend plugin registered under `name`, or nullptr.
using factory_lookup = std::function<const toolhost_debug_target_factory_t*(const std::string& name)>;

struct launch_settings {
  std::string backend, connect, key;  // from [servers.X.settings.debugger]; empty backend: none
  std::string symbol_path;            // debugger.symbol_path; empty: _NT_SYMBOL_PATH
  int64_t symbol_timeout_ms = 20000;  // debugger.symbol_timeout_ms: the longest a symbol server may stall
};

class debugger_tools {
 public:
  debugger_tools(factory_lookup lookup, launch_settings launch);
  ~debugger_tools();

  sdk::result command(const std::string& line, int64_t timeout_ms, const std::string& format,
                      const std::function<bool()>& cancelled, const session::progress_fn& progress = {});
  sdk::result open(const std::string& backend, const std::string& connect, const std::string& key);
  sdk::result close();
  sdk::result output(int64_t id, int64_t offset, int64_t limit, const std::string& filter);

  static constexpr int64_t kDefaultTimeoutMs = 10000;
  static constexpr int64_t kMaxTimeoutMs = 300000;

 private:
  // Opens under the lock; the text to show and whether it worked.
  absl::StatusOr<std::string> attach(const std::string& backend, const std::string& connect, const std::string& key);

  // Between calls a background tick collects stops: hits that do not count (a false condition,
  // passes left) are resumed at once so the target is never left frozen; others are kept for
  // the next call to show.
  void service_loop();

  factory_lookup lookup_;
  launch_settings launch_;
  std::mutex mutex_;
  std::unique_ptr<session> session_;
  std::string backend_, connect_;
  std::string symbol_path_;  // carried from one session to the next (.sympath)
  output_store store_;
  std::mutex service_mutex_;
  std::condition_variable service_wake_;
  bool stopping_ = false;
  std::thread service_;
};

// The server instructions: how the tools behave and what to do without a target.
extern const char* const kInstructions;

}  // namespace toolhost::debugger
