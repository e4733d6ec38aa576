#include "host/transport/http_stream.hpp"

namespace toolhost::transport::http {

stream::stream(int index, size_t max_bytes) : index_(index), max_bytes_(max_bytes) {}

void stream::push(std::string json, bool last) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    bytes_ += json.size();
    events_.push_back({next_seq_++, std::move(json)});
    // Drops the oldest events but the newest: the answer (always last) and, at worst, the one
    // message just added survive.
    while (bytes_ > max_bytes_ && events_.size() > 1) {
      bytes_ -= events_.front().data.size();
      events_.pop_front();
      ++dropped_;
    }
    ended_ = last;
    wake = wake_;
  }
  if (wake) wake();
}

void stream::forget() {
  std::lock_guard lock(mutex_);
  dropped_ += events_.size();
  events_.clear();
  events_.shrink_to_fit();
  bytes_ = 0;
}

size_t stream::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

uint64_t stream::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

bool stream::delivered_to_end() const {
  std::lock_guard lock(mutex_);
  return ended_ && delivered_ + 1 >= next_seq_;
}

bool stream::attached() const {
  std::lock_guard lock(mutex_);
  return static_cast<bool>(wake_);
}

void stream::set_request(std::string id_json) {
  std::lock_guard lock(mutex_);
  request_ = std::move(id_json);
}

std::string stream::request() const {
  std::lock_guard lock(mutex_);
  return request_;
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

void stream::set_status(int status) {
  std::lock_guard lock(mutex_);
  status_ = status;
}

int stream::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

}  // namespace toolhost::transport::http
