#include "host/mcp/worker_pool.hpp"

#include <chrono>
#include <thread>

namespace toolhost::mcp {

worker_pool::worker_pool(size_t min_idle, size_t max_threads) : min_idle_(min_idle), max_threads_(max_threads) {}

worker_pool::~worker_pool() {
  std::unique_lock lock(mutex_);
  stopping_ = true;
  wake_.notify_all();
  idle_.wait(lock, [this] { return threads_ == 0; });
}

bool worker_pool::submit(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  if (stopping_) return false;
  if (waiting_ <= queue_.size()) {  // nobody free to take it: grow
    if (threads_ >= max_threads_) return false;
    ++threads_;
    std::thread(&worker_pool::run, this).detach();
  }
  queue_.push_back(std::move(task));
  wake_.notify_one();
  return true;
}

void worker_pool::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    ++waiting_;
    const bool got = wake_.wait_for(lock, std::chrono::seconds(30), [this] { return stopping_ || !queue_.empty(); });
    --waiting_;
    if (queue_.empty()) {
      if (stopping_ || (!got && waiting_ >= min_idle_)) break;
      continue;
    }
    auto task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    task();
    task = nullptr;  // release captures outside the lock
    lock.lock();
    --running_;
    if (running_ == 0 && queue_.empty()) idle_.notify_all();
  }
  --threads_;
  idle_.notify_all();
}

bool worker_pool::wait_idle(int timeout_ms) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return running_ == 0 && queue_.empty(); });
}

size_t worker_pool::busy() const {
  std::lock_guard lock(mutex_);
  return running_ + queue_.size();
}

}  // namespace toolhost::mcp
