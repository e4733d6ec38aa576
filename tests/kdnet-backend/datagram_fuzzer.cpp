// libFuzzer target over the KDNET datagram decoder and the poke parser. Inputs are raw UDP
// payloads. With a fixed data key most inputs fail authentication, so the fuzzer also
// re-encodes its input as an authentic datagram and decodes that, which drives the metadata,
// padding and poke parsing past the tag check.
#include <cstddef>
#include <cstdint>
#include <span>

#include "toolhost/kdnet/datagram.hpp"
#include "toolhost/kdnet/handshake.hpp"
#include "toolhost/kdnet/key.hpp"

using namespace toolhost::kdnet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const key_set keys = [] {
    key_set k = key_set::from_control(parse_key("1.1.1.1")->bytes);
    k.data = key256{};
    return k;
  }();
  const std::span<const uint8_t> input(data, size);
  auto d = decode_datagram(keys, input);
  if (d.ok()) (void)parse_poke(d->payload);

  if (size >= 2 && size <= kMaxPayload) {
    datagram crafted{data[0], (data[1] & 1) ? channel::control : channel::data, size, (data[1] & 2) != 0,
                     std::vector<uint8_t>(data + 2, data + size)};
    auto wire = encode_datagram(keys, crafted);
    if (wire.ok()) {
      auto back = decode_datagram(keys, *wire);
      if (!back.ok() || back->payload != crafted.payload) __builtin_trap();
      (void)parse_poke(back->payload);
    }
  }
  (void)parse_key(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
