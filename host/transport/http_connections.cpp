#include "host/transport/http_connections.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <utility>

namespace toolhost::transport::http {

bool connection_table::join(slot& s, std::weak_ptr<member> m) {
  std::shared_ptr<member> victim;
  {
    std::lock_guard lock(mutex_);
    if (s.joined_) return true;
    if (count_ >= max_ && !take_oldest_waiting_locked(victim)) return false;
    s.member_ = std::move(m);
    s.joined_ = true;
    peak_ = std::max(peak_, ++count_);
  }
  if (victim) victim->preempt();
  return true;
}

void connection_table::set_waiting(slot& s, bool waiting) {
  std::lock_guard lock(mutex_);
  if (!s.joined_ || s.waiting_ == waiting) return;
  s.waiting_ = waiting;
  if (waiting) {
    s.position_ = waiting_.insert(waiting_.end(), &s);
  } else {
    waiting_.erase(s.position_);
  }
}

void connection_table::leave(slot& s) {
  std::lock_guard lock(mutex_);
  if (!s.joined_) return;
  if (s.waiting_) waiting_.erase(s.position_);
  s.waiting_ = false;
  s.joined_ = false;
  --count_;
}

bool connection_table::preempt_one() {
  std::shared_ptr<member> victim;
  bool freed = false;
  {
    std::lock_guard lock(mutex_);
    freed = take_oldest_waiting_locked(victim);
  }
  if (victim) victim->preempt();
  return freed;
}

bool connection_table::take_oldest_waiting_locked(std::shared_ptr<member>& victim) {
  if (waiting_.empty()) return false;
  slot* oldest = waiting_.front();
  waiting_.pop_front();
  oldest->waiting_ = false;
  oldest->joined_ = false;  // its place is given away now; its own leave() changes nothing
  --count_;
  victim = oldest->member_.lock();  // null: it is being destroyed and closes anyway
  return true;
}

size_t connection_table::size() const {
  std::lock_guard lock(mutex_);
  return count_;
}

size_t connection_table::take_peak() {
  std::lock_guard lock(mutex_);
  return std::exchange(peak_, count_);
}

size_t default_max_connections(size_t fd_limit) { return std::clamp<size_t>(fd_limit / 4 * 3, 8, 4096); }

size_t current_fd_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 1u << 20;
  return static_cast<size_t>(r.rlim_cur);
}

}  // namespace toolhost::transport::http
