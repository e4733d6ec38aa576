// libFuzzer target: arbitrary bytes through the KDCOM decoder, and every data packet it yields
// through the state-change decoder.
#include <cstddef>
#include <cstdint>

#include <toolhost/kd/kdcom_frame.h>
#include <toolhost/kd/state_change.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  toolhost::kd::kdcom_decoder d;
  // Feed in two pieces so split frames are exercised too.
  const size_t half = size / 2;
  d.feed(std::span<const uint8_t>(data, half));
  while (auto f = d.next()) (void)toolhost::kd::decode_state_change(f->payload);
  d.feed(std::span<const uint8_t>(data + half, size - half));
  while (auto f = d.next()) {
    (void)toolhost::kd::decode_state_change(f->payload);
    (void)toolhost::kd::decode_version(f->payload);
  }
  while (d.has_partial()) {
    d.drop_partial();
    while (auto f = d.next()) (void)toolhost::kd::decode_state_change(f->payload);
  }
  (void)toolhost::kd::decode_state_change(std::span<const uint8_t>(data, size));
  return 0;
}
