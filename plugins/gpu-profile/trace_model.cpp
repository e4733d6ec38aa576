#include "trace_model.hpp"

#include <algorithm>
#include <cctype>

namespace toolhost::gpu_profile {

std::string_view format_name(trace_format f) {
  switch (f) {
    case trace_format::xctrace_xml: return "xctrace-xml";
    case trace_format::chrome_json: return "chrome-trace-json";
    case trace_format::nsys_sqlite: return "nsys-sqlite";
  }
  return "unknown";
}

bool is_frame_range_name(std::string_view name) {
  if (name.starts_with("ProfilerStep#")) return true;
  // NVTX ranges an app pushes around each frame: "Frame", "frame 12", "RenderFrame".
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("frame") != std::string::npos;
}

}  // namespace toolhost::gpu_profile
