// libFuzzer over the session layer: any bytes as one incoming message, after initialize, must
// never crash the host; answers go to a sink that drops them. No plugin is loaded, so the
// fuzzer exercises framing, dispatch and parameter checking, and (the server hides the home
// folder) the privacy filter and UTF-8 repair on every answer that echoes the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "host/config/config.hpp"
#include "host/mcp/session.hpp"
#include "host/plugins/loader.hpp"

namespace {
struct world {
  toolhost::config::config cfg = *toolhost::config::parse(
      "[servers.fuzz]\nplugins = []\n[servers.fuzz.privacy]\nhide_home_in_paths = true\n", "fuzz.toml", "/");
  toolhost::plugins::loader loader{{}};
  toolhost::mcp::server srv{cfg, *cfg.find_server("fuzz"), loader};
  world() { srv.load_now(); }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static world w;
  const toolhost::mcp::sink ignore = [](toolhost::mcp::outgoing) {};
  auto s = toolhost::mcp::session::create(w.srv, ignore);
  s->handle(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{}}})",
      ignore);
  s->handle(std::string(reinterpret_cast<const char*>(data), size), ignore);
  s->close(1000);
  w.srv.workers().wait_idle(1000);
  return 0;
}
