#include <toolhost/mcp_client/transport.hpp>

#include <toolhost/mcp_client/http_transport.hpp>
#include <toolhost/mcp_client/stdio_transport.hpp>

namespace toolhost::mcp_client {

absl::StatusOr<std::unique_ptr<transport>> make_transport(const upstream_spec& spec) {
  if (!spec.url.empty() && !spec.command.empty()) {
    return absl::InvalidArgumentError("the upstream names both a command and a URL; give one");
  }
  if (!spec.url.empty()) return make_http_transport(spec);
  if (spec.command.empty()) return absl::InvalidArgumentError("the upstream names neither a command nor a URL");
  return std::unique_ptr<transport>(std::make_unique<stdio_transport>(spec));
}

}  // namespace toolhost::mcp_client
