// Until plugins run isolated, a plugin that crashes takes the host with it. This makes sure the
// person learns which call did it: a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) is
// logged from a signal-safe handler with the tool and plugin that were running, and a plugin
// that calls exit() during a call gets the exit status 70 (EX_SOFTWARE) and a log line rather
// than a clean 0. The signal still ends the process with its usual status.
#pragma once

#include <string_view>

namespace toolhost::mcp::fault_log {

// Installs the signal handlers and the exit hooks. Call once, before serving.
void install();

// Marks the calling thread as running `what` ("tool", "resource", "prompt") `name` of plugin
// `plugin` in server `server`, for as long as it lives. Cheap: no allocation after the first
// on each thread (which sets up the thread's signal stack, so a stack overflow is reported too).
class in_call {
 public:
  in_call(std::string_view what, std::string_view name, std::string_view plugin, std::string_view server);
  ~in_call();
  in_call(const in_call&) = delete;
  in_call& operator=(const in_call&) = delete;

 private:
  int slot_;
};

}  // namespace toolhost::mcp::fault_log
