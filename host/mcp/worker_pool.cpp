#include "host/mcp/worker_pool.hpp"

#include "host/memory.hpp"

#include <sched.h>

#include <chrono>
#include <thread>

namespace {

// After a task, a worker keeps looking at the queue this long (yielding the CPU to anyone who
// wants it) before it sleeps: a client's next request usually follows the answer within tens of
// microseconds (a Node client takes ~150), and waking a sleeping thread costs more than the
// whole call, 35-60 us where an idle virtual CPU has to be woken too (bench/mcp,
// bench/rea-filter). At most this much CPU per task is spent on it.
constexpr auto kLinger = std::chrono::microseconds(200);
// A request that comes while a worker is still in its task waits this long for that worker
// before a sleeping one is woken: see submit().
constexpr auto kHandoff = std::chrono::microseconds(30);
// A free worker beyond min_idle retires after this long without a task: the threads a burst
// started (up to max_threads, one per call that blocked) are gone soon after it, while a steady
// load, which keeps its workers busy more often than this, never pays the ~30 us of starting one.
constexpr auto kRetire = std::chrono::seconds(5);

}  // namespace

namespace toolhost::mcp {

// The workers kept idle start with the pool, so that an idle server has the threads it keeps
// between bursts (and the first call does not wait for one to start).
worker_pool::worker_pool(size_t min_idle, size_t max_threads) : min_idle_(min_idle), max_threads_(max_threads) {
  std::lock_guard lock(mutex_);
  for (; threads_ < std::min(min_idle_, max_threads_); ++threads_) std::thread(&worker_pool::run, this).detach();
}

worker_pool::~worker_pool() {
  std::unique_lock lock(mutex_);
  stopping_ = true;
  wake_.notify_all();
  idle_.wait(lock, [this] { return threads_ == 0; });
}

bool worker_pool::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    if (waiting_ <= queue_.size()) {  // nobody free to take it: grow
      if (threads_ >= max_threads_) return false;
      ++threads_;
      std::thread(&worker_pool::run, this).detach();
    }
    queue_.push_back(std::move(task));
    submitter_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
    queued_.store(queue_.size(), std::memory_order_release);
    // A lingering worker takes the task without being woken; waking a sleeping one as well would
    // only cost a context switch (it finds the queue empty) on the core the call needs.
    if (queue_.size() <= lingering_) return true;
    if (running_ == 0) {
      wake_.notify_one();
      return true;
    }
  }
  // A worker is still in a task. It is often one that has just written its answer, the answer
  // this very request follows, and on its way back it takes the next task from the queue: give
  // it that chance before waking a sleeping worker (with the request waiting on the wakeup).
  for (const auto until = std::chrono::steady_clock::now() + kHandoff;
       queued_.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::yield();
  }
  std::lock_guard lock(mutex_);
  if (queue_.size() > lingering_) wake_.notify_one();
  return true;
}

void worker_pool::run() {
  std::unique_lock lock(mutex_);
  bool just_ran = false;
  bool ran_any = false;  // since this thread started
  bool replace = false;
  while (true) {
    ++waiting_;
    // Linger only while there are fewer lingering workers than tasks still running (the next
    // requests are their clients' answers to them): a lone client's calls would otherwise end up
    // spread over several lingering workers that take turns, each keeping the others' linger
    // alive, and four spinning threads on two cores make every call wait for a time slice.
    if (just_ran && queue_.empty() && !stopping_ && lingering_ <= running_) {
      ++lingering_;
      const bool only_task = running_ == 0;
      lock.unlock();
      if (only_task) leave_cpu(submitter_cpu_.load(std::memory_order_relaxed));
      const auto until = std::chrono::steady_clock::now() + kLinger;
      while (queued_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      lock.lock();
      --lingering_;  // from here on the queue is checked under the lock before sleeping
    }
    just_ran = false;
    const bool got = wake_.wait_for(lock, kRetire, [this] { return stopping_ || !queue_.empty(); });
    --waiting_;
    if (queue_.empty()) {
      if (stopping_ || (!got && waiting_ >= min_idle_)) break;
      // A worker kept for min_idle that has run tasks is replaced by a fresh thread instead:
      // glibc caches a thread's freed blocks for that thread until it exits (after a burst,
      // hundreds of KiB scattered so that they pin whole pages), and the replacement starts with
      // none. It costs one thread start per quiet spell.
      if (!got && ran_any) {
        replace = true;
        break;
      }
      continue;
    }
    auto task = std::move(queue_.front());
    queue_.pop_front();
    queued_.store(queue_.size(), std::memory_order_release);
    ++running_;
    just_ran = true;
    ran_any = true;
    lock.unlock();
    task();
    task = nullptr;  // release captures outside the lock
    lock.lock();
    --running_;
    if (running_ == 0 && queue_.empty()) idle_.notify_all();
  }
  if (replace) {
    std::thread(&worker_pool::run, this).detach();  // counted in threads_ already: this one's place
  } else {
    --threads_;
    idle_.notify_all();
  }
  if (ran_any) memory::note_release();
}

void worker_pool::leave_cpu(int cpu) {
  if (cpu < 0 || sched_getcpu() != cpu) return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  // Moving happens on the first call; the second gives the scheduler its whole choice back.
  if (sched_setaffinity(0, sizeof others, &others) == 0) sched_setaffinity(0, sizeof allowed, &allowed);
}

bool worker_pool::wait_idle(int timeout_ms) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                        [this] { return running_ == 0 && queue_.empty(); });
}

size_t worker_pool::busy() const {
  std::lock_guard lock(mutex_);
  return running_ + queue_.size();
}

}  // namespace toolhost::mcp
