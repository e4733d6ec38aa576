// MCP over stdio: newline-delimited JSON-RPC on stdin and on a private copy of the original
// stdout. fd 1 itself is pointed at stderr, so whatever a plugin prints can never corrupt the
// protocol stream.
#pragma once

#include <functional>

#include "host/mcp/server.hpp"

namespace toolhost::transport {

// Moves the protocol's stdout out of the way: returns a private duplicate of fd 1 for protocol
// frames and points fd 1 at stderr. Call once, before any plugin loads.
int take_stdout();

// Serves `srv` on stdin and `protocol_fd` until stdin closes or `stop_requested` becomes true
// (checked whenever a message arrives and on a periodic wake-up). Returns the process exit code.
int serve_stdio(mcp::server& srv, int protocol_fd, const std::function<bool()>& stop_requested);

}  // namespace toolhost::transport
