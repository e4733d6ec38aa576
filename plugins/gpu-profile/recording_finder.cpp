#include "recording_finder.hpp"

namespace toolhost::gpu_profile {

std::optional<std::filesystem::path> newest_recording(const std::filesystem::path& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::optional<fs::path> best;
  fs::file_time_type best_time{};
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (name.empty() || name[0] == '.') continue;
    const std::string ext = p.extension().string();
    const bool bundle = ext == ".trace" && it->is_directory(ec);
    const bool file =
        it->is_regular_file(ec) && (ext == ".json" || ext == ".xml" || ext == ".sqlite" || ext == ".nsys-rep");
    if (!bundle && !file) continue;
    const fs::file_time_type t = it->last_write_time(ec);
    if (ec) continue;
    if (!best || t > best_time || (t == best_time && p > *best)) {
      best = p;
      best_time = t;
    }
  }
  return best;
}

std::string how_to_record(const std::filesystem::path& folder) {
  return "There is no GPU recording of the app yet (looked in " + folder.string() +
         "). Ask the user to press **Record a GPU run** in the workbench sidebar. On a Mac that records a Metal "
         "System Trace of the .app; on Linux the equivalent is a trace saved into that folder: `nsys profile "
         "--trace=cuda,nvtx,opengl,vulkan -o run <app>` then `nsys export --type sqlite run.nsys-rep`, a Chrome "
         "trace-event JSON (Perfetto UI \"Download JSON\", chrome://tracing, or PyTorch's "
         "profiler.export_chrome_trace), or on a Mac an `xctrace export` of the Metal tables as XML.";
}

}  // namespace toolhost::gpu_profile
