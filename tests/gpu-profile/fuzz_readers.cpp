// libFuzzer target: the xctrace XML and Chrome JSON readers, then the metrics and the report,
// on arbitrary bytes. The first byte picks the reader. A reader may refuse the input; it must
// never crash, hang or read out of bounds.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "profile_metrics.hpp"
#include "profile_report.hpp"
#include "suggestions.hpp"
#include "trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace gp = toolhost::gpu_profile;
  if (size < 1) return 0;
  const bool xml = (data[0] & 1) != 0;
  ++data;
  --size;
  if (size == 0) return 0;
  // fmemopen wants a writable buffer in older glibc; copy the input.
  std::unique_ptr<char[]> copy(new char[size]);
  std::copy(data, data + size, copy.get());
  std::unique_ptr<std::FILE, decltype(&std::fclose)> in(fmemopen(copy.get(), size, "rb"), &std::fclose);
  if (!in) return 0;
  auto trace = xml ? gp::read_xctrace_xml(in.get(), "input") : gp::read_chrome_json(in.get(), "input");
  if (!trace.ok()) return 0;
  const gp::profile p = gp::compute_profile(*trace, {});
  (void)gp::report_json(p, {"input", ""}, gp::suggest(p));
  return 0;
}
