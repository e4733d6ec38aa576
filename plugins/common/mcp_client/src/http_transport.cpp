#include <toolhost/mcp_client/http_transport.hpp>

namespace toolhost::mcp_client {

absl::StatusOr<std::unique_ptr<transport>> make_http_transport(const upstream_spec& spec) {
  return absl::UnimplementedError("Streamable HTTP upstreams (" + spec.url + ") are not supported yet; give a command instead");
}

}  // namespace toolhost::mcp_client
