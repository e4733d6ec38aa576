// libFuzzer: every accessor of toolhost::pe::image over arbitrary bytes, as a file and as a
// loaded image whose odd pages are missing.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <toolhost/pe/image.hpp>

namespace {

void exercise(const toolhost::pe::image& img) {
  (void)img.exports();
  (void)img.codeview();
  (void)img.read_string(img.header().entry_point, 64);
  if (auto fns = img.runtime_functions(); fns.ok()) {
    size_t n = 0;
    for (const auto& f : *fns) {
      if (++n > 64) break;
      (void)img.unwind(f.unwind_info);
      (void)img.function_entry(f.begin);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  if (auto img = toolhost::pe::image::from_bytes(bytes, "fuzz.sys"); img.ok()) exercise(*img);
  auto reader = [&bytes](uint64_t offset, std::span<uint8_t> out) -> size_t {
    size_t n = 0;
    while (n < out.size() && offset + n < bytes.size() && (((offset + n) >> 12) & 1) == 0) {
      out[n] = static_cast<uint8_t>(bytes[offset + n]);
      ++n;
    }
    return n;
  };
  if (auto img = toolhost::pe::image::from_memory("fuzz", reader); img.ok()) exercise(*img);
  return 0;
}
