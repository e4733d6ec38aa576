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

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>

namespace toolhost::transport::http {

struct server_context;

// Each connection's handlers run on a strand of its own. The strand's type is spelled out
// rather than erased (asio's any_io_executor): an erased strand is too large for its inline
// storage, so every asynchronous operation's executor copy was a heap allocation, 24 of them
// and their frees per HTTP call (callgrind, bench/mcp).
using connection_executor = boost::asio::strand<boost::asio::io_context::executor_type>;
using connection_socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, connection_executor>;

// Serves `socket` until it closes; refuses it with 503 when the table is full of working
// connections.
void serve_connection(connection_socket socket, server_context& ctx);

}  // namespace toolhost::transport::http
