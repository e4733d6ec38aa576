// libFuzzer: arbitrary text as a project file. Loading must either refuse it with a sentence
// or give a store that saves to JSON which loads back to the same store.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "project_store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto store = toolhost::eleven::project_store::parse(text, "/fuzz/p.json", "/fuzz/binary");
  if (!store.ok()) {
    if (store.status().message().empty()) std::abort();
    return 0;
  }
  const std::string json = store->to_json();
  auto again = toolhost::eleven::project_store::parse(json, "/fuzz/p.json", "/fuzz/binary");
  if (!again.ok() || again->to_json() != json) std::abort();
  (void)store->undo();
  return 0;
}
