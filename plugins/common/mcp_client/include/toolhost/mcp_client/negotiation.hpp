// Which MCP revision to speak to an upstream, and what each one puts on the wire.
//
// The decision, as the 2026-07-28 spec has a dual-era client make it: probe with `server/discover`
// (a 2026-07-28 request, its _meta naming our version, capabilities and identity). The upstream
// is a 2026-07-28 server when it answers with a result whose `supportedVersions` lists
// 2026-07-28; then nothing else is sent to open the conversation, and every later request carries
// the same _meta. Anything else (Method not found, any other JSON-RPC or HTTP error such as a
// 2025 server's "not initialized" 400, a result without that version, or no answer within the
// probe's time) means the upstream is of the initialize era: `initialize` with 2025-11-25 follows
// on the same connection, as it always did. The spec's stdio rule ("any non-modern error or a
// timeout means legacy") and its HTTP rule ("try a modern request and inspect the 400") come to
// this one test, because our transport turns an HTTP error into a JSON-RPC error.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <rapidjson/document.h>

#include <toolhost/mcp_client/connection.hpp>

namespace toolhost::mcp_client {

inline constexpr std::string_view kModernVersion = "2026-07-28";  // stateless, server/discover
inline constexpr std::string_view kLegacyVersion = "2025-11-25";  // initialize, sessions
// 2026-07-28's error for HTTP headers that do not match the body (Mcp-Method, Mcp-Name, Mcp-Param-*).
inline constexpr int64_t kHeaderMismatch = -32020;

// Who we are and what we can do, as both eras tell the upstream.
struct client_identity {
  std::string name;
  std::string version;
  std::string capabilities_json = "{}";
  std::string log_level;  // 2026-07-28 requests' logLevel; empty: none
};

// What the upstream said about itself (initialize's reply, or server/discover's).
struct server_info {
  std::string protocol_version;
  std::string capabilities;  // JSON object
  std::string server;        // the serverInfo object, JSON ("{}" when a 2026-07-28 server gave none)
  std::string instructions;  // may be empty
  // How the revision was chosen, for the log: "server/discover", or why initialize followed.
  std::string chosen_because;
  bool modern() const { return protocol_version == kModernVersion; }
};

// server/discover's params: just the per-request _meta.
std::string discover_params(const client_identity& me);

// Reads the probe's answer. OK with the 2026-07-28 server's info when `answer` is a discover
// result listing 2026-07-28; otherwise an error whose message says why the upstream counts as
// initialize-era (it is logged, not shown as a failure).
absl::StatusOr<server_info> read_discover_answer(const absl::StatusOr<std::string>& answer);

// initialize's params (2025-11-25), and its reply read; an error names what is wrong with it.
std::string initialize_params(const client_identity& me);
absl::StatusOr<server_info> read_initialize_answer(std::string_view reply);

// The 2026-07-28 _meta members added to a request's params._meta (created when absent): the
// revision, capabilities, clientInfo and, when set, the log level.
void add_request_meta(rapidjson::Value& params, rapidjson::Document::AllocatorType& alloc, const client_identity& me);

// Takes the 2026-07-28 per-request context (protocolVersion, clientCapabilities, clientInfo,
// logLevel) out of a _meta object that came from someone else's request.
void remove_request_meta(rapidjson::Value& meta);

// A 2026-07-28 result as the initialize era has it: without `resultType` "complete", and without
// the upstream's own _meta serverInfo (the host in front names itself). Other fields pass.
std::string legacy_result(std::string result_json);

// Opens the conversation on `conn` as described above. `probe_timeout` bounds the wait for
// server/discover's answer; `start_timeout` that for initialize. An error says why neither worked.
absl::StatusOr<server_info> negotiate(connection& conn, const client_identity& me,
                                      std::chrono::milliseconds probe_timeout, std::chrono::milliseconds start_timeout);

}  // namespace toolhost::mcp_client
