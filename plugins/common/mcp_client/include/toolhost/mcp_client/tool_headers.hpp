// A 2026-07-28 upstream's tools over Streamable HTTP, read for their x-mcp-header annotations
// (toolhost/sdk/param_headers.hpp): the client remembers them from tools/list, so that each
// tools/call carries its annotated arguments as Mcp-Param-{Name} headers, which a strict server
// (toolhost is one) requires. A tool whose annotations the spec forbids is one that "clients
// using the Streamable HTTP transport MUST exclude from the result of tools/list": the server
// would check headers no client can be sure to send right. Over stdio there are no headers and
// nothing is left out.
#pragma once

#include <string>
#include <vector>

#include <toolhost/mcp_client/transport.hpp>

namespace toolhost::mcp_client {

struct read_tools {
  std::vector<std::string> kept;  // the listing without the refused tools, in its order
  tool_annotations annotations;   // of the kept tools that have any
  // One sentence per tool left out, naming it and saying why (for the owner's log).
  std::vector<std::string> refused;
};

// Reads `tools` (each a tool object as compact JSON, as client::list_all returns them).
read_tools read_tool_annotations(std::vector<std::string> tools);

}  // namespace toolhost::mcp_client
