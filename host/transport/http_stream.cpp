#include "host/transport/http_stream.hpp"

namespace toolhost::transport::http {

stream::stream(int index, size_t keep) : index_(index), keep_(keep) {}

void stream::push(std::string json, bool last) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    events_.push_back({next_seq_++, std::move(json)});
    while (events_.size() > keep_) events_.pop_front();
    ended_ = last;
    wake = wake_;
  }
  if (wake) wake();
}

void stream::end() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    ended_ = true;
    wake = wake_;
  }
  if (wake) wake();
}

bool stream::ended() const {
  std::lock_guard lock(mutex_);
  return ended_;
}

stream::slice stream::take(uint64_t after) const {
  std::lock_guard lock(mutex_);
  slice out;
  for (const auto& e : events_) {
    if (e.seq > after) out.events.push_back(e);
  }
  out.ended = ended_;
  return out;
}

uint64_t stream::attach(std::function<void()> wake) {
  std::function<void()> previous;
  uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    previous = std::move(wake_);
    wake_ = std::move(wake);
    generation = ++generation_;
  }
  if (previous) previous();  // lets the replaced connection notice and finish
  return generation;
}

void stream::detach(uint64_t generation) {
  std::lock_guard lock(mutex_);
  if (generation_ == generation) wake_ = nullptr;
}

bool stream::is_current(uint64_t generation) const {
  std::lock_guard lock(mutex_);
  return generation_ == generation;
}

void stream::mark_delivered(uint64_t seq) {
  std::lock_guard lock(mutex_);
  if (seq > delivered_) delivered_ = seq;
}

uint64_t stream::delivered() const {
  std::lock_guard lock(mutex_);
  return delivered_;
}

}  // namespace toolhost::transport::http
