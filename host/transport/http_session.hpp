// A Streamable HTTP session: one MCP session (host/mcp/session.hpp) plus the SSE streams its
// messages travel on. A response and everything related to its request (progress, logs,
// elicitation) go to the stream of the POST that carried the request; everything else goes to
// the standalone stream a GET opens. Each message goes to exactly one stream. Sessions have
// cryptographically random ids, and the registry is the only place that maps ids to sessions,
// so one client's JSON-RPC ids never meet another's.
//
// Memory stays bounded whatever a client does: each stream keeps at most kStreamBytes for replay,
// a stream is dropped as soon as nobody can resume it (its answer went out as plain JSON, or a
// connection wrote out its end), only a few unfinished-and-abandoned ones are kept, and ending
// the session frees everything.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "host/mcp/server.hpp"
#include "host/mcp/session.hpp"
#include "host/transport/http_stream.hpp"

namespace toolhost::transport::http {

class http_session : public std::enable_shared_from_this<http_session> {
 public:
  static std::shared_ptr<http_session> create(mcp::server& srv, std::string id);
  ~http_session();

  const std::string& id() const { return id_; }

  // What one POST body turned into.
  struct post_result {
    int status = 200;  // 200: read `stream`; 202: nothing to send; 400: `body` says why;
                       // 404: the session ended meanwhile
    std::string body;  // a JSON-RPC error for 400
    std::shared_ptr<class stream> stream;
    bool initialize = false;  // it carried `initialize`
    bool stateless = false;   // a 2026-07-28 request: no session needed
  };
  // `kept`: the POST's stream is kept for replay (Last-Event-ID) and ended with the session. A
  // connection's own 2026-07-28 session passes false: that revision has no resumption, and the
  // connection ends the stream it writes.
  post_result post(const std::string& body, const mcp::request_headers& headers = {}, bool kept = true);

  // The GET stream; opening it counts as using the session.
  std::shared_ptr<class stream> standalone();
  // A stream by its index (from a Last-Event-ID), while it is kept for replay.
  std::shared_ptr<class stream> find_stream(int index);
  // Nobody can resume `s` any more (its answer went out whole): its events are freed.
  void release(const std::shared_ptr<class stream>& s);
  // The connection that carried `s` closed before its answer: the request is cancelled (a
  // 2025-11-25 client that could resume gets the caller's grace period first).
  void abandon(const std::shared_ptr<class stream>& s);

  // Ends every stream and the MCP session; in-flight calls are cancelled.
  void close(int grace_ms);

  void touch();
  std::chrono::steady_clock::time_point last_used() const;
  std::chrono::steady_clock::time_point created() const { return created_; }
  // The client sent something beyond initialize (a request, or it opened the GET stream).
  bool used() const;
  // A call is in flight or a connection carries one of its streams: evicting it would cut off
  // a client that is there.
  bool active() const;
  // Bytes its streams keep.
  size_t kept_bytes() const;

  // Bounds on what a session keeps (see above).
  static constexpr size_t kStreamBytes = 64 * 1024;
  static constexpr size_t kAbandonedStreams = 8;

 private:
  http_session(std::string id);
  // A stream ended: it is kept (for a client that lost it) until released or pushed out.
  void finished(const std::shared_ptr<class stream>& s);
  void retire_locked(const std::shared_ptr<class stream>& s);

  const std::string id_;
  std::shared_ptr<mcp::session> mcp_;
  mutable std::mutex mutex_;
  std::map<int, std::shared_ptr<class stream>> streams_;  // by index, live and kept
  std::deque<int> finished_;
  int next_stream_ = 1;
  std::shared_ptr<class stream> standalone_;
  const std::chrono::steady_clock::time_point created_;
  std::chrono::steady_clock::time_point last_used_;
  bool used_ = false;
  bool closed_ = false;
};

// The sessions of one endpoint, at most `max_sessions`. When a new one comes at the cap, room is
// made by ending, in this order: the oldest session nobody used beyond initialize, then the
// session idle the longest if it has been idle for `evict_idle` and is not active. An active or
// recently used session is never ended for a newcomer: a flood of initializes only pushes out
// its own kind, and when nothing may go the newcomer is refused.
class session_registry {
 public:
  struct limits {
    size_t max_sessions = 1024;
    std::chrono::steady_clock::duration evict_idle = std::chrono::minutes(1);
    std::chrono::steady_clock::duration unused_expiry = std::chrono::seconds(15);  // never used: ends then
    std::chrono::steady_clock::duration idle_expiry = std::chrono::hours(1);       // used, then idle
  };
  explicit session_registry(limits l) : limits_(l) {}

  // A fresh session with a new random id, not yet registered.
  static std::shared_ptr<http_session> make(mcp::server& srv);
  struct admission {
    bool added = false;
    std::shared_ptr<http_session> evicted;  // for the caller to close
  };
  admission add(const std::shared_ptr<http_session>& s);
  std::shared_ptr<http_session> find(std::string_view id);
  std::shared_ptr<http_session> remove(std::string_view id);
  // Removes and returns the sessions whose time is up: unused ones after unused_expiry, others
  // idle (and not active) for idle_expiry.
  std::vector<std::shared_ptr<http_session>> expire();
  std::vector<std::shared_ptr<http_session>> take_all();
  size_t size();
  // The most sessions held at once since the last call.
  size_t take_peak();
  const limits& settings() const { return limits_; }

 private:
  const limits limits_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<http_session>, std::less<>> sessions_;
  size_t peak_ = 0;
};

// 32 hex digits from OpenSSL's CSPRNG.
std::string random_session_id();

}  // namespace toolhost::transport::http
