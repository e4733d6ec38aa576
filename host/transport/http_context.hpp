// What every connection of one Streamable HTTP server shares: the options, the request checks,
// the endpoints with their sessions, the connection table and the logs that must not grow per
// request.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host/log.hpp"
#include "host/mcp/server.hpp"
#include "host/transport/http_connections.hpp"
#include "host/transport/http_security.hpp"
#include "host/transport/http_server.hpp"
#include "host/transport/http_session.hpp"

namespace toolhost::transport::http {

struct endpoint_state {
  endpoint_state(std::string p, mcp::server* s, session_registry::limits limits)
      : path(std::move(p)), server(s), sessions(limits) {}
  std::string path;
  mcp::server* server;
  session_registry sessions;
};

struct server_context {
  explicit server_context(const options& o);

  const options opts;
  const request_guard guard;
  std::vector<std::unique_ptr<endpoint_state>> endpoints;
  connection_table connections;
  // One line now and then, however many times they happen.
  log::repeated refused_connections;
  log::repeated accept_failures;
  log::repeated evicted_sessions;
  log::repeated refused_sessions;

  void flush_logs();
};

// Closes a session off the I/O threads: closing waits briefly for running calls.
void close_later(std::shared_ptr<http_session> s, int grace_ms);

}  // namespace toolhost::transport::http
