// A Streamable HTTP session: one MCP session (host/mcp/session.hpp) plus the SSE streams its
// messages travel on. A response and everything related to its request (progress, logs,
// elicitation) go to the stream of the POST that carried the request; everything else goes to
// the standalone stream a GET opens. Each message goes to exactly one stream. Sessions have
// cryptographically random ids, and the registry is the only place that maps ids to sessions,
// so one client's JSON-RPC ids never meet another's.
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
    int status = 200;                 // 200: read `stream`; 202: nothing to send; 400: `body` says why
    std::string body;                 // a JSON-RPC error for 400
    std::shared_ptr<class stream> stream;
    bool initialize = false;          // it carried `initialize`
  };
  post_result post(std::string_view body);

  std::shared_ptr<class stream> standalone() const { return standalone_; }
  // A stream by its index (from a Last-Event-ID), while it is kept for replay.
  std::shared_ptr<class stream> find_stream(int index);

  // Ends every stream and the MCP session; in-flight calls are cancelled.
  void close(int grace_ms);

  void touch();
  std::chrono::steady_clock::time_point last_used() const;

 private:
  http_session(std::string id);
  void deliver(mcp::outgoing message);
  void retire(const std::shared_ptr<class stream>& s);  // keeps a finished stream for a while

  const std::string id_;
  std::shared_ptr<mcp::session> mcp_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<class stream>> routes_;     // request id (JSON) -> its stream
  std::map<std::string, std::vector<mcp::outgoing>> unrouted_;      // sent before the route existed
  std::map<int, std::shared_ptr<class stream>> streams_;            // by index, live and kept
  std::deque<int> finished_;
  int next_stream_ = 1;
  std::shared_ptr<class stream> standalone_;
  std::chrono::steady_clock::time_point last_used_;
  bool closed_ = false;
};

// The sessions of one endpoint.
class session_registry {
 public:
  explicit session_registry(size_t max_sessions) : max_(max_sessions) {}

  // A fresh session with a new random id, not yet registered.
  static std::shared_ptr<http_session> make(mcp::server& srv);
  // Registers `s`. When the registry is full, the session unused the longest makes room and is
  // returned, for the caller to close (clients that vanish without DELETE must not lock out
  // new ones).
  std::shared_ptr<http_session> add(const std::shared_ptr<http_session>& s);
  std::shared_ptr<http_session> find(std::string_view id);
  std::shared_ptr<http_session> remove(std::string_view id);
  // Removes and returns sessions idle for longer than `idle`.
  std::vector<std::shared_ptr<http_session>> expire(std::chrono::steady_clock::duration idle);
  std::vector<std::shared_ptr<http_session>> take_all();

 private:
  const size_t max_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<http_session>, std::less<>> sessions_;
};

// 32 hex digits from OpenSSL's CSPRNG.
std::string random_session_id();

}  // namespace toolhost::transport::http
