// An upstream MCP server over Streamable HTTP (MCP 2025-03-26 to 2025-11-25, and 2026-07-28).
#pragma once

#include <memory>

#include <absl/status/statusor.h>

#include <toolhost/mcp_client/transport.hpp>

namespace toolhost::mcp_client {

// Checks the URL (http:// only for now) and returns a transport for it.
absl::StatusOr<std::unique_ptr<transport>> make_http_transport(const upstream_spec& spec);

}  // namespace toolhost::mcp_client
