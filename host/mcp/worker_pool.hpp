// Threads that run plugin code (tool calls, reads, renders) off the transport's reader thread.
// It grows when every worker is busy, so a 30-minute call never starves a quick one, and idle
// workers beyond the minimum retire.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace toolhost::mcp {

class worker_pool {
 public:
  explicit worker_pool(size_t min_idle = 2, size_t max_threads = 512);
  ~worker_pool();  // waits for queued and running work
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  // Queues `task`; false when the pool is at max_threads with every thread busy.
  bool submit(std::function<void()> task);

  // Blocks until no task is queued or running, or `timeout_ms` passed; true when idle.
  bool wait_idle(int timeout_ms);

  size_t busy() const;

 private:
  void run();
  // Moves the calling thread, about to linger, off `cpu` when it runs there and may run
  // elsewhere. With a lone client the next request comes through the thread that submitted the
  // last task (the stdio reader, which lingers watching for it) and its answer through the
  // lingering worker. Two spinning threads on one core take turns at every yield while the
  // client's core goes idle as it waits, and waking an idle virtual CPU for the answer costs
  // more than the whole call (25-60 us; perf sched showed exactly this in bench/mcp's slow runs).
  // Apart, the client's core is never idle. The scheduler's own balancing does not part them:
  // both threads always ran just now, so it keeps them where their caches are.
  static void leave_cpu(int cpu);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> queue_;
  std::atomic<size_t> queued_{0};       // queue_.size(), readable without the lock (lingering workers)
  std::atomic<int> submitter_cpu_{-1};  // where the last task was submitted from
  size_t min_idle_;
  size_t max_threads_;
  size_t threads_ = 0;
  size_t waiting_ = 0;    // free: lingering or asleep
  size_t lingering_ = 0;  // free and watching queued_ without the lock
  size_t running_ = 0;
  bool stopping_ = false;
};

}  // namespace toolhost::mcp
