#include "host/mcp/deadlines.hpp"

namespace toolhost::mcp {

deadlines::~deadlines() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t deadlines::add(clock::time_point when, std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_id_++;
  const bool soonest = pending_.empty() || when < pending_.begin()->first.first;
  pending_.emplace(std::pair{when, id}, std::move(fn));
  by_id_.emplace(id, when);
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  if (soonest) wake_.notify_all();
  return id;
}

void deadlines::remove(uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  pending_.erase({it->second, id});
  by_id_.erase(it);
}

void deadlines::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (pending_.empty()) {
      wake_.wait(lock);
      continue;
    }
    auto first = pending_.begin();
    if (clock::now() < first->first.first) {
      wake_.wait_until(lock, first->first.first);
      continue;
    }
    std::function<void()> fn = std::move(first->second);
    by_id_.erase(first->first.second);
    pending_.erase(first);
    lock.unlock();
    fn();
    fn = nullptr;  // its captures die outside the lock
    lock.lock();
  }
}

}  // namespace toolhost::mcp
