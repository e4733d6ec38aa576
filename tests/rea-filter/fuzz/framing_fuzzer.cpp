// Feeds arbitrary bytes to the MCP client's framing: NDJSON lines into the JSON-RPC
// classifier, and the same bytes as a server-sent event stream. Neither may crash, hang or
// grow without bound, whatever an upstream sends.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <toolhost/mcp_client/json_rpc.hpp>
#include <toolhost/mcp_client/sse_parser.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace toolhost::mcp_client;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  line_splitter splitter(4096);
  // Split the input in two feeds at a point the input chooses, as reads would.
  const size_t cut = size == 0 ? 0 : data[0] % size;
  auto on_line = [](std::string_view line) {
    auto m = parse_message(line);
    if (m.ok()) {
      int64_t id = 0;
      (void)integer_id(*m, &id);
    }
  };
  (void)splitter.feed(bytes.substr(0, cut), on_line);
  (void)splitter.feed(bytes.substr(cut), on_line);

  sse_parser events;
  events.feed(bytes, [](std::string_view event) { (void)parse_message(event); });
  return 0;
}
