// Time limits on calls (call_timeout_ms): one thread per server that runs a callback when a
// deadline passes, so that a call a plugin never finishes is still answered.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace toolhost::mcp {

class deadlines {
 public:
  using clock = std::chrono::steady_clock;

  deadlines() = default;
  ~deadlines();  // stops the thread; pending callbacks never run
  deadlines(const deadlines&) = delete;
  deadlines& operator=(const deadlines&) = delete;

  // Runs `fn` on the timer's thread once `when` passes, unless remove() came first. Returns the
  // id remove() takes. The thread starts with the first deadline. [any-thread]
  uint64_t add(clock::time_point when, std::function<void()> fn);
  // Forgets a deadline (the call finished in time); harmless when it already ran. [any-thread]
  void remove(uint64_t id);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::pair<clock::time_point, uint64_t>, std::function<void()>> pending_;
  std::map<uint64_t, clock::time_point> by_id_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace toolhost::mcp
