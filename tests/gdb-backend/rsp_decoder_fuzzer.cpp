// Feeds arbitrary bytes to the RSP decoder in arbitrary splits and checks its invariants.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <toolhost/rsp/packet.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks where to split the rest, so partial reads are exercised too.
  const size_t split = data[0];
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  toolhost::rsp::decoder d(4096);
  const size_t cut = bytes.empty() ? 0 : split % (bytes.size() + 1);
  d.feed(bytes.substr(0, cut));
  d.feed(bytes.substr(cut));
  while (d.has_event()) {
    auto e = d.next();
    if (e.type == toolhost::rsp::event::kind::packet) {
      if (e.payload.size() > 4096) std::abort();
      // A decoded payload re-framed with escapes must decode to itself.
      toolhost::rsp::decoder again(1 << 20);
      again.feed(toolhost::rsp::frame(toolhost::rsp::escape_binary(e.payload)));
      if (!again.has_event()) std::abort();
      auto back = again.next();
      if (back.type != toolhost::rsp::event::kind::packet || back.payload != e.payload) std::abort();
    }
  }
  return 0;
}
