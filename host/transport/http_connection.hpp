// One accepted HTTP/1.1 connection of the Streamable HTTP server: reading requests under the
// header, body and idle deadlines, the checks of http_security.hpp, POST/GET/DELETE on an
// endpoint, and writing answers as JSON or SSE.
//
// A connection's life, and what bounds each part:
//   waiting   for the first byte of a request (idle_timeout between requests; a new connection
//             must complete its headers within header_timeout of opening), then for the rest of
//             the headers (header_timeout from their first byte). A waiting connection may be
//             preempted when a new one comes at the cap (http_connections.hpp).
//   reading   the body, within body_timeout.
//   working   writing an answer, or carrying a stream. While it waits for its stream it watches
//             the socket: a client that goes away cancels the request it sent (at once when it
//             never saw an event id to resume with, else after resume_grace unless it resumed).
#pragma once

#include <boost/asio/ip/tcp.hpp>

namespace toolhost::transport::http {

struct server_context;

// Serves `socket` until it closes; refuses it with 503 when the table is full of working
// connections.
void serve_connection(boost::asio::ip::tcp::socket socket, server_context& ctx);

}  // namespace toolhost::transport::http
