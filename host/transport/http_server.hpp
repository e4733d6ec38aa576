// MCP Streamable HTTP (2025-03-26 .. 2025-11-25) on Boost.Beast: POST, GET and DELETE on each
// server's endpoint path, JSON or SSE answers, sessions, resumable streams, and the request
// checks of http_security.hpp. A few I/O threads serve every connection asynchronously, so a
// slow or stalled client holds no thread; tool calls run on each server's worker pool.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "host/mcp/server.hpp"
#include "host/transport/http_security.hpp"

namespace toolhost::transport::http {

struct options {
  bind_address bind;
  std::string token;                         // empty: no token required
  std::vector<std::string> allowed_origins;  // besides loopback origins
  size_t max_body_bytes = 4u << 20;
  std::chrono::seconds body_timeout{30};     // a request's body must arrive within this
  std::chrono::seconds idle_timeout{300};    // a kept-alive connection may wait this long for a request
  std::chrono::seconds keepalive_interval{15};  // SSE comment lines on quiet streams
  std::chrono::minutes session_idle{60};     // sessions unused this long are closed
  size_t max_sessions = 1024;                // per endpoint; beyond it the least recently used ends
  unsigned io_threads = 0;                   // 0: 2..4 depending on the machine
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
