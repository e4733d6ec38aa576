// MCP Streamable HTTP (2025-03-26 .. 2025-11-25) on Boost.Beast: POST, GET and DELETE on each
// server's endpoint path, JSON or SSE answers, sessions, resumable streams, and the request
// checks of http_security.hpp. A few I/O threads serve every connection asynchronously, so a
// slow or stalled client holds no thread; tool calls run on each server's worker pool.
//
// Every resource a client can make the server hold has a bound: connections (the table in
// http_connections.hpp), the time a connection may take to send its headers, to send its body,
// or to stay idle between requests, sessions per endpoint (http_session.hpp), requests in flight
// and subscriptions per session (mcp::session_limits), and what streams keep for replay.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "host/mcp/server.hpp"
#include "host/transport/http_security.hpp"
#include "host/transport/http_session.hpp"

namespace toolhost::transport::http {

struct options {
  bind_address bind;
  std::string token;                         // empty: no token required
  std::vector<std::string> allowed_origins;  // besides loopback origins
  size_t max_body_bytes = 4u << 20;
  std::chrono::seconds header_timeout{10};      // a request's headers must be complete this long after
                                                // the connection opened or their first byte came
  std::chrono::seconds idle_timeout{15};        // a kept-alive connection may wait this long for a request
  std::chrono::seconds body_timeout{30};        // a request's body must arrive within this after its headers
  std::chrono::seconds keepalive_interval{15};  // SSE comment lines on quiet streams
  std::chrono::seconds resume_grace{10};        // a dropped SSE stream's request is cancelled unless
                                                // the client resumes it within this
  size_t max_connections = 0;                   // 0: from the descriptor limit (default_max_connections)
  session_registry::limits sessions;            // per endpoint
  unsigned io_threads = 0;                      // 0: 2..4 depending on the machine
};

// One MCP server at one path ("/mcp", "/NAME/mcp").
struct endpoint {
  std::string path;
  mcp::server* server = nullptr;
};

// Serves until `stop_requested` turns true (polled). Logs the URL of every endpoint on stderr
// once listening ("... at http://127.0.0.1:PORT/mcp"). Returns the process exit code.
int serve(const options& opts, const std::vector<endpoint>& endpoints, const std::function<bool()>& stop_requested);

}  // namespace toolhost::transport::http
