// libFuzzer: arbitrary bytes as an .eh_frame section, for 4- and 8-byte pointers.
#include <cstddef>
#include <cstdint>

#include <toolhost/analysis/eh_frame.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (unsigned pointer : {4u, 8u}) {
    for (const auto& e : toolhost::analysis::parse_eh_frame({data, size}, 0x401000, pointer)) {
      if (e.end <= e.start) __builtin_trap();  // an extent is never empty or reversed
    }
  }
  return 0;
}
