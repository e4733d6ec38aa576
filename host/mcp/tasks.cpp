#include "host/mcp/tasks.hpp"

#include <sys/random.h>

#include <algorithm>
#include <ctime>
#include <stdexcept>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

#include "host/mcp/call_context.hpp"

namespace toolhost::mcp {
namespace {

// 128 random bits: a task id is all a 2026-07-28 client shows to read its task, so it must not be
// guessable (the extension's security considerations).
std::string random_task_id() {
  unsigned char bytes[16];
  size_t filled = 0;
  while (filled < sizeof bytes) {
    const ssize_t got = getrandom(bytes + filled, sizeof bytes - filled, 0);
    if (got < 0) throw std::runtime_error("getrandom failed: no secure random source for a task id");
    filled += static_cast<size_t>(got);
  }
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += hex[b >> 4];
    id += hex[b & 15];
  }
  return id;
}

std::string iso8601(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

}  // namespace

const char* task_status_name(task_status s) {
  switch (s) {
    case task_status::working: return "working";
    case task_status::input_required: return "input_required";
    case task_status::completed: return "completed";
    case task_status::failed: return "failed";
    case task_status::cancelled: return "cancelled";
  }
  return "working";
}

task::task(std::string id_, std::string owner_, std::string tool_, task_era era_, int64_t ttl,
           std::shared_ptr<call_state> call)
    : id(std::move(id_)),
      owner(std::move(owner_)),
      tool(std::move(tool_)),
      era(era_),
      ttl_ms(ttl),
      created(std::chrono::system_clock::now()),
      expires(std::chrono::steady_clock::now() + std::chrono::milliseconds(ttl)),
      updated_(created),
      call_(std::move(call)) {}

void task::touch() { updated_ = std::chrono::system_clock::now(); }

task_status task::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

std::string task::json(bool detailed, int64_t poll_interval_ms) const {
  std::lock_guard lock(mutex_);
  const bool modern = era == task_era::v2026;
  std::string out = cat(R"({"taskId":)", sdk::quote(id), R"(,"status":")", task_status_name(status_), "\"");
  if (!message_.empty()) append(out, R"(,"statusMessage":)", sdk::quote(message_));
  append(out, R"(,"createdAt":")", iso8601(created), R"(","lastUpdatedAt":")", iso8601(updated_), "\"");
  append(out, modern ? R"(,"ttlMs":)" : R"(,"ttl":)", ttl_ms);
  if (!is_terminal(status_)) append(out, modern ? R"(,"pollIntervalMs":)" : R"(,"pollInterval":)", poll_interval_ms);
  if (detailed) {
    if (status_ == task_status::input_required && !questions_.empty()) {
      out += R"(,"inputRequests":{)";
      bool first = true;
      for (const auto& [key, request] : questions_) {
        append(out, first ? "" : ",", sdk::quote(key), ":", request);
        first = false;
      }
      out += '}';
    }
    if (status_ == task_status::completed) append(out, R"(,"result":)", payload_);
    if (status_ == task_status::failed) append(out, R"(,"error":)", payload_);
  }
  out += '}';
  return out;
}

std::string task::payload(bool& is_error) const {
  std::lock_guard lock(mutex_);
  is_error = status_ != task_status::completed;
  if (status_ == task_status::cancelled) return R"({"code":-32800,"message":"The task was cancelled"})";
  return payload_;
}

void task::set_message(std::string message) {
  std::lock_guard lock(mutex_);
  if (is_terminal(status_)) return;
  message_ = std::move(message);
  touch();
}

std::optional<std::string> task::ask(std::string request_json, const std::function<bool()>& give_up) {
  std::unique_lock lock(mutex_);
  if (is_terminal(status_)) return std::nullopt;
  const std::string key = cat("input-", ++next_key_);  // unique over the task's life
  questions_.emplace_back(key, std::move(request_json));
  status_ = task_status::input_required;
  touch();
  changed_.notify_all();
  lock.unlock();
  publish();
  lock.lock();
  std::optional<std::string> answer;
  // Polls so that a cancelled call stops waiting without a wake-up path of its own.
  while (!is_terminal(status_)) {
    if (auto it = answers_.find(key); it != answers_.end()) {
      answer = std::move(it->second);
      answers_.erase(it);
      break;
    }
    if (give_up()) break;
    changed_.wait_for(lock, std::chrono::milliseconds(20));
  }
  questions_.erase(std::remove_if(questions_.begin(), questions_.end(), [&](const auto& q) { return q.first == key; }),
                   questions_.end());
  if (!is_terminal(status_) && questions_.empty() && waiting_ == 0) status_ = task_status::working;
  touch();
  lock.unlock();
  publish();
  return answer;
}

void task::waiting_for_input(bool waiting) {
  {
    std::lock_guard lock(mutex_);
    waiting_ += waiting ? 1 : -1;
    if (is_terminal(status_)) return;
    status_ = (waiting_ > 0 || !questions_.empty()) ? task_status::input_required : task_status::working;
    touch();
  }
  publish();
}

void task::answer(const rapidjson::Value& responses) {
  if (!responses.IsObject()) return;
  std::unique_lock lock(mutex_);
  for (const auto& m : responses.GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    const bool asked = std::any_of(questions_.begin(), questions_.end(), [&](const auto& q) { return q.first == key; });
    if (!asked || !m.value.IsObject()) continue;  // never asked, answered already, or not an answer
    answers_[key] = sdk::to_json(m.value);
    // Answered: no longer shown, even before the call takes the answer.
    questions_.erase(
        std::remove_if(questions_.begin(), questions_.end(), [&](const auto& q) { return q.first == key; }),
        questions_.end());
  }
  if (!is_terminal(status_) && questions_.empty() && waiting_ == 0) status_ = task_status::working;
  touch();
  changed_.notify_all();
  lock.unlock();
  publish();
}

bool task::wait_terminal(const std::function<bool()>& stop) const {
  std::unique_lock lock(mutex_);
  while (!is_terminal(status_)) {
    if (stop()) return false;
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  return true;
}

uint64_t task::watch(int64_t poll_interval_ms, watcher w) {
  std::lock_guard lock(mutex_);
  if (is_terminal(status_) || watchers_.size() >= kMaxWatchers) return 0;
  watch_poll_ms_ = poll_interval_ms;
  watchers_.emplace_back(++next_watch_, std::move(w));
  return next_watch_;
}

void task::unwatch(uint64_t id) {
  std::lock_guard lock(mutex_);
  watchers_.erase(std::remove_if(watchers_.begin(), watchers_.end(), [id](const auto& w) { return w.first == id; }),
                  watchers_.end());
}

void task::publish() {
  std::vector<watcher> to;
  int64_t poll_ms = 0;
  {
    std::lock_guard lock(mutex_);
    if (status_ == published_) return;
    published_ = status_;
    for (const auto& [id, w] : watchers_) to.push_back(w);
    if (is_terminal(status_)) watchers_.clear();  // nothing changes after this one
    poll_ms = watch_poll_ms_;
  }
  if (to.empty()) return;
  // As tasks/get shows it: 2026-07-28's with the questions and the result, 2025-11-25's plain.
  const std::string shown = json(era == task_era::v2026, poll_ms);
  for (const auto& w : to) w(shown);
}

// ---- The store ------------------------------------------------------------------------------

task_store::~task_store() { cancel_all(0); }

std::shared_ptr<task> task_store::create(std::string owner, std::string tool, task_era era, int64_t ttl_ms,
                                         std::shared_ptr<call_state> call) {
  const int64_t ttl = ttl_ms <= 0 ? limits_.default_ttl_ms : std::clamp(ttl_ms, limits_.min_ttl_ms, limits_.max_ttl_ms);
  std::lock_guard lock(mutex_);
  purge_locked(std::chrono::steady_clock::now());
  if (tasks_.size() >= limits_.max_tasks) {
    // Room is made by forgetting the oldest finished task; running ones are never dropped.
    auto oldest = tasks_.end();
    for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
      if (!is_terminal(it->second->status())) continue;
      if (oldest == tasks_.end() || it->second->created < oldest->second->created) oldest = it;
    }
    if (oldest == tasks_.end()) return nullptr;
    forget_locked(oldest);
  }
  auto t = std::make_shared<task>(random_task_id(), std::move(owner), std::move(tool), era, ttl, std::move(call));
  tasks_.emplace(t->id, t);
  ++running_;
  return t;
}

std::shared_ptr<task> task_store::find(std::string_view id, std::string_view owner) {
  std::lock_guard lock(mutex_);
  purge_locked(std::chrono::steady_clock::now());
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second->owner != owner) return nullptr;
  return it->second;
}

std::vector<std::shared_ptr<task>> task_store::list(std::string_view owner) {
  std::lock_guard lock(mutex_);
  purge_locked(std::chrono::steady_clock::now());
  std::vector<std::shared_ptr<task>> out;
  for (const auto& [id, t] : tasks_) {
    if (t->owner == owner) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->created < b->created; });
  return out;
}

void task_store::settle(const std::shared_ptr<task>& t, task_status status, std::string payload, bool call_ended) {
  record_settlement(t, status, std::move(payload), call_ended);
  t->publish();
}

void task_store::record_settlement(const std::shared_ptr<task>& t, task_status status, std::string payload,
                                   bool call_ended) {
  std::lock_guard lock(mutex_);
  {
    std::lock_guard tl(t->mutex_);
    if (call_ended) t->call_.reset();
    if (!is_terminal(t->status_)) {
      if (payload.size() > limits_.max_one_result) {
        status = task_status::completed;
        payload = cat(R"({"content":[{"type":"text","text":)",
                      sdk::quote(cat("The result of ", t->tool, " was ", payload.size(), " bytes, more than the ",
                                     limits_.max_one_result,
                                     " bytes toolhost keeps for a task; call it without a "
                                     "task, or ask for less.")),
                      R"(}],"isError":true})");
      }
      t->status_ = status;
      t->payload_ = std::move(payload);
      t->questions_.clear();
      t->touch();
      t->changed_.notify_all();
    }
  }
  if (call_ended && running_ > 0) --running_;
  runs_done_.notify_all();
  if (tasks_.count(t->id) == 0) return;  // forgotten meanwhile (expired, its client gone)
  const size_t size = t->payload_.size();
  // The newest result stays; the oldest finished tasks make room for it.
  while (bytes_ + size > limits_.max_result_bytes) {
    auto oldest = tasks_.end();
    for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
      if (it->second == t || bytes_of_.count(it->second.get()) == 0) continue;
      if (oldest == tasks_.end() || it->second->created < oldest->second->created) oldest = it;
    }
    if (oldest == tasks_.end()) break;
    forget_locked(oldest);
  }
  bytes_of_[t.get()] = size;
  bytes_ += size;
}

void task_store::cancel(const std::shared_ptr<task>& t) {
  std::shared_ptr<call_state> call;
  {
    std::lock_guard tl(t->mutex_);
    if (is_terminal(t->status_)) return;
    t->status_ = task_status::cancelled;
    t->questions_.clear();
    t->touch();
    t->changed_.notify_all();
    call = t->call_;
  }
  t->publish();
  if (call) call->cancel();
}

void task_store::drop_owner(std::string_view owner) {
  std::vector<std::shared_ptr<task>> gone;
  {
    std::lock_guard lock(mutex_);
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (it->second->owner != owner) {
        ++it;
        continue;
      }
      gone.push_back(it->second);
      auto next = std::next(it);
      forget_locked(it);
      it = next;
    }
  }
  for (auto& t : gone) cancel(t);
}

void task_store::cancel_all(int grace_ms) {
  std::vector<std::shared_ptr<task>> all;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, t] : tasks_) all.push_back(t);
  }
  for (auto& t : all) cancel(t);
  std::unique_lock lock(mutex_);
  runs_done_.wait_for(lock, std::chrono::milliseconds(grace_ms), [this] { return running_ == 0; });
}

size_t task_store::size() const {
  std::lock_guard lock(mutex_);
  return tasks_.size();
}

size_t task_store::result_bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

void task_store::purge_locked(std::chrono::steady_clock::time_point now) {
  std::vector<std::shared_ptr<task>> expired_running;
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    if (it->second->expires > now) {
      ++it;
      continue;
    }
    if (!is_terminal(it->second->status())) expired_running.push_back(it->second);
    auto next = std::next(it);
    forget_locked(it);
    it = next;
  }
  // A call that outlived its task's time to live is stopped: nobody can read its result.
  for (auto& t : expired_running) {
    std::shared_ptr<call_state> call;
    {
      std::lock_guard tl(t->mutex_);
      t->status_ = task_status::cancelled;
      call = t->call_;
    }
    if (call) call->cancel();
  }
}

void task_store::forget_locked(std::map<std::string, std::shared_ptr<task>, std::less<>>::iterator it) {
  if (auto b = bytes_of_.find(it->second.get()); b != bytes_of_.end()) {
    bytes_ -= b->second;
    bytes_of_.erase(b);
  }
  tasks_.erase(it);
}

}  // namespace toolhost::mcp
