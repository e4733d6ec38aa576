// The wire under an MCP client: something that carries whole JSON-RPC messages both ways.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/sdk/param_headers.hpp>

namespace toolhost::mcp_client {

// Where the upstream server is: a command to run (stdio) or a Streamable HTTP URL.
struct upstream_spec {
  std::vector<std::string> command;            // program and arguments; PATH is searched
  std::map<std::string, std::string> env;      // added to (and overriding) our own environment
  std::string cwd;                             // empty: our own working directory
  std::string url;                             // set instead of `command` for Streamable HTTP
  std::map<std::string, std::string> headers;  // extra HTTP headers (e.g. Authorization)

  // "`npx -y rea-agents mcp`" or the URL: how error messages name the upstream.
  std::string describe() const;
};

// The x-mcp-header annotations of an upstream's tools, by tool name; tools without any are absent.
using tool_annotations = std::map<std::string, std::vector<sdk::param_headers::annotation>>;

// Callbacks a transport delivers on its own thread. `on_message` gets one JSON text per
// message; `on_closed` is called exactly once, with a sentence saying why the wire closed
// ("exited with status 1", "was killed by signal 9").
struct transport_events {
  std::function<void(std::string_view)> on_message;
  std::function<void(const std::string&)> on_closed;
};

class transport {
 public:
  virtual ~transport() = default;
  // Connects (starts the process). Events start flowing after this returns OK.
  virtual absl::Status start(transport_events events) = 0;
  // Sends one message. [any-thread]
  virtual absl::Status send(std::string_view json) = 0;
  // Ends the connection: closes the wire, stops the process, joins the threads. Idempotent;
  // `on_closed` has run when it returns.
  virtual void close() = 0;
  // The upstream's process id, or 0 when there is none (HTTP).
  virtual int pid() const { return 0; }
  // Told once the revision is chosen (initialize succeeded, or server/discover): HTTP sends the
  // version in a header from then on and, in 2025-11-25, opens its GET stream.
  virtual void negotiated(std::string_view protocol_version) { (void)protocol_version; }
  // Told the annotations of the upstream's tools each time its tools/list was read (and those of
  // the last listing when a new connection opens): 2026-07-28 over HTTP mirrors a tools/call's
  // annotated arguments in Mcp-Param-{Name} headers; stdio has no headers. [any-thread]
  virtual void mirror_arguments(std::shared_ptr<const tool_annotations> tools) { (void)tools; }
  // Tells the other side that the request `id_json` is cancelled. `notice` is the
  // notifications/cancelled message, which stdio (both eras) and 2025-era HTTP send; 2026-07-28
  // HTTP closes the request's stream instead, which that revision makes the cancellation.
  virtual absl::Status cancel(const std::string& id_json, std::string_view notice) {
    (void)id_json;
    return send(notice);
  }
  // Lets a thread that waits for an answer read the wire itself, delivering every message
  // through `on_message` as the transport's own thread would, until `done()` is true, the
  // deadline passes or the wire ends. Being woken by another thread that read the answer costs
  // a context switch, tens of microseconds on a busy machine, on every request (bench/rea-filter).
  // Returns false at once when another thread is reading already; the caller then waits to be
  // woken, and may try again. `done` is polled at least every 10 ms. [any-thread]
  virtual bool supports_read_until() const { return false; }
  virtual bool read_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) {
    (void)done;
    (void)deadline;
    return false;
  }
};

// A transport for `spec`: stdio when it names a command, HTTP when it names a URL.
absl::StatusOr<std::unique_ptr<transport>> make_transport(const upstream_spec& spec);

}  // namespace toolhost::mcp_client
