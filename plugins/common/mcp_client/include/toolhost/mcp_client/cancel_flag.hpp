// A cancellation signal one thread raises and another waits on: the bridge between the
// host's on_cancel callback and a request waiting for the upstream.
#pragma once

#include <functional>
#include <mutex>
#include <string>

namespace toolhost::mcp_client {

class cancel_flag {
 public:
  // Raises the flag once and runs the hook, if any. [any-thread]
  void cancel(std::string reason) {
    std::lock_guard lock(mutex_);
    if (cancelled_) return;
    cancelled_ = true;
    reason_ = std::move(reason);
    if (hook_) hook_(reason_);
  }
  bool cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }
  std::string reason() const {
    std::lock_guard lock(mutex_);
    return reason_;
  }
  // Sets the function run on cancel (at once if already cancelled); an empty one removes it.
  // Holding the mutex while hooks run means that once this returns with an empty hook, the
  // old hook is no longer running and never will be.
  void set_hook(std::function<void(const std::string&)> hook) {
    std::lock_guard lock(mutex_);
    hook_ = std::move(hook);
    if (hook_ && cancelled_) hook_(reason_);
  }

 private:
  mutable std::mutex mutex_;
  bool cancelled_ = false;
  std::string reason_;
  std::function<void(const std::string&)> hook_;
};

}  // namespace toolhost::mcp_client
