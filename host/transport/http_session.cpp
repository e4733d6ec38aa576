#include "host/transport/http_session.hpp"

#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <stdexcept>
#include <thread>
#include <utility>

#include <sys/random.h>

#include <cerrno>

#include "host/mcp/jsonrpc.hpp"

namespace toolhost::transport::http {
namespace {}  // namespace

std::string random_session_id() {
  // The kernel's CSPRNG: 128 unpredictable bits, as the MCP spec asks of a session id.
  unsigned char bytes[16];
  size_t filled = 0;
  while (filled < sizeof bytes) {
    const ssize_t got = getrandom(bytes + filled, sizeof bytes - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::runtime_error("getrandom failed: no secure random source for a session id");
    filled += static_cast<size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

http_session::http_session(std::string id)
    : id_(std::move(id)),
      standalone_(std::make_shared<stream>(0, kStreamBytes)),
      created_(std::chrono::steady_clock::now()),
      last_used_(created_) {}

std::shared_ptr<http_session> http_session::create(mcp::server& srv, std::string id) {
  std::shared_ptr<http_session> s(new http_session(std::move(id)));
  std::weak_ptr<http_session> weak = s;
  // What belongs to no request goes to the GET stream.
  s->mcp_ = mcp::session::create(srv, [weak](mcp::outgoing m) {
    auto self = weak.lock();
    if (self && !m.json.empty()) self->standalone_->push(std::move(m.json), false);
  });
  return s;
}

http_session::~http_session() = default;

void http_session::touch() {
  std::lock_guard lock(mutex_);
  last_used_ = std::chrono::steady_clock::now();
}

std::chrono::steady_clock::time_point http_session::last_used() const {
  std::lock_guard lock(mutex_);
  return last_used_;
}

bool http_session::used() const {
  std::lock_guard lock(mutex_);
  return used_;
}

bool http_session::active() const {
  if (mcp_->in_flight() != 0 || standalone_->attached()) return true;
  std::lock_guard lock(mutex_);
  for (const auto& [index, s] : streams_) {
    if (s->attached()) return true;
  }
  return false;
}

size_t http_session::kept_bytes() const {
  size_t total = standalone_->bytes();
  std::lock_guard lock(mutex_);
  for (const auto& [index, s] : streams_) total += s->bytes();
  return total;
}

std::shared_ptr<stream> http_session::standalone() {
  std::lock_guard lock(mutex_);
  used_ = true;
  return standalone_;
}

void http_session::finished(const std::shared_ptr<stream>& s) {
  std::lock_guard lock(mutex_);
  retire_locked(s);
}

void http_session::retire_locked(const std::shared_ptr<stream>& s) {
  if (streams_.count(s->index()) == 0) return;  // released already
  finished_.push_back(s->index());
  while (finished_.size() > kAbandonedStreams) {
    streams_.erase(finished_.front());
    finished_.pop_front();
  }
}

void http_session::release(const std::shared_ptr<stream>& s) {
  if (s == standalone_) return;
  s->forget();
  std::lock_guard lock(mutex_);
  streams_.erase(s->index());
  finished_.erase(std::remove(finished_.begin(), finished_.end(), s->index()), finished_.end());
}

void http_session::abandon(const std::shared_ptr<stream>& s) {
  if (s == standalone_ || s->ended() || s->attached()) return;
  const std::string id = s->request();
  if (!id.empty()) mcp_->cancel_request(id, "the client went away from");
}

http_session::post_result http_session::post(const std::string& body, const mcp::request_headers& headers, bool kept) {
  post_result out;
  // The POST's stream exists before the message is handled: everything the session sends for
  // the request (its answer, progress, questions to the client) goes straight to it, from
  // whichever thread sends it.
  std::shared_ptr<stream> s;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      out.status = 404;
      return out;
    }
    s = std::make_shared<stream>(next_stream_++, kStreamBytes);
    if (kept) streams_[s->index()] = s;
  }
  std::weak_ptr<http_session> weak = weak_from_this();
  const mcp::sink reply = [weak, s](mcp::outgoing m) {
    if (m.http_status != 0) s->set_status(m.http_status);
    if (m.json.empty()) {
      if (m.final) s->end();
    } else {
      s->push(std::move(m.json), m.final);
    }
    if (!m.final) return;
    if (auto self = weak.lock()) self->finished(s);
  };
  const mcp::handled h = mcp_->handle(body, reply, headers);
  {
    std::lock_guard lock(mutex_);
    last_used_ = std::chrono::steady_clock::now();
    if (!h.is_initialize && !h.requests.empty()) used_ = true;
  }
  if (h.parse_error || h.requests.empty()) {
    // A message that is no request at all (unparsable, "jsonrpc":"1.0", no method) was answered
    // with an error while handle() ran: that error is this POST's 400 answer, with the id when
    // the message had one. A notification or a response has no answer: 202.
    stream::slice slice = s->take(0);
    release(s);
    if (!slice.events.empty()) {
      out.status = 400;
      out.body = std::move(slice.events.front().data);
    } else {
      out.status = 202;
    }
    return out;
  }
  s->set_request(h.requests.front());  // one request per POST: HTTP takes no batches
  out.stream = std::move(s);
  out.initialize = h.is_initialize;
  out.stateless = h.stateless;
  return out;
}

std::shared_ptr<stream> http_session::find_stream(int index) {
  if (index == 0) return standalone_;
  std::lock_guard lock(mutex_);
  auto it = streams_.find(index);
  return it == streams_.end() ? nullptr : it->second;
}

void http_session::close(int grace_ms) {
  std::vector<std::shared_ptr<stream>> streams;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    for (auto& [index, s] : streams_) streams.push_back(s);
    streams_.clear();
    finished_.clear();
  }
  mcp_->close(grace_ms);
  for (auto& s : streams) {
    s->end();
    s->forget();
  }
  standalone_->end();
  standalone_->forget();
}

// ---- Registry -------------------------------------------------------------------------------

std::shared_ptr<http_session> session_registry::make(mcp::server& srv) {
  return http_session::create(srv, random_session_id());
}

session_registry::admission session_registry::add(const std::shared_ptr<http_session>& s) {
  const auto now = std::chrono::steady_clock::now();
  admission out;
  std::lock_guard lock(mutex_);
  if (sessions_.size() >= limits_.max_sessions) {
    auto victim = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {  // never used, oldest first
      if (!it->second->used() && (victim == sessions_.end() || it->second->created() < victim->second->created())) {
        victim = it;
      }
    }
    if (victim == sessions_.end()) {  // then idle the longest, past evict_idle and not active
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
        const auto used = it->second->last_used();
        if (now - used < limits_.evict_idle) continue;
        if (victim != sessions_.end() && victim->second->last_used() <= used) continue;
        if (!it->second->active()) victim = it;
      }
    }
    if (victim == sessions_.end()) return out;
    out.evicted = victim->second;
    sessions_.erase(victim);
  }
  sessions_.emplace(s->id(), s);
  peak_ = std::max(peak_, sessions_.size());
  out.added = true;
  return out;
}

std::shared_ptr<http_session> session_registry::find(std::string_view id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

std::shared_ptr<http_session> session_registry::remove(std::string_view id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  auto s = it->second;
  sessions_.erase(it);
  return s;
}

std::vector<std::shared_ptr<http_session>> session_registry::expire() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<http_session>> out;
  std::lock_guard lock(mutex_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const http_session& s = *it->second;
    const bool due = s.used() ? now - s.last_used() >= limits_.idle_expiry && !s.active()
                              : now - s.created() >= limits_.unused_expiry;
    if (due) {
      out.push_back(it->second);
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

size_t session_registry::size() {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

size_t session_registry::take_peak() {
  std::lock_guard lock(mutex_);
  return std::exchange(peak_, sessions_.size());
}

std::vector<std::shared_ptr<http_session>> session_registry::take_all() {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<http_session>> out;
  for (auto& [id, s] : sessions_) out.push_back(s);
  sessions_.clear();
  return out;
}

}  // namespace toolhost::transport::http
