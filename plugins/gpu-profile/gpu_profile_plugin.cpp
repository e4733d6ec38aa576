// The gpu-profile plugin: the `gpu_profile` tool of the `eleven` server.
//
// Reads the newest GPU recording in the recordings folder and reports frame time, GPU busy
// time, gaps and CPU-to-GPU latency, with what they suggest. The folder is, in this order: the
// settings' `recordings_dir`; `recordings` next to the file open in the Eleven window (asked over
// ELEVEN_BRIDGE); $XDG_DATA_HOME/toolhost/gpu-recordings.
#include <chrono>
#include <cstdlib>
#include <ctime>

#include <toolhost/sdk/sdk.hpp>
#include "bridge_view.hpp"
#include "profile_metrics.hpp"
#include "profile_report.hpp"
#include "recording_finder.hpp"
#include "suggestions.hpp"
#include "trace_reader.hpp"

namespace {

namespace sdk = toolhost::sdk;
namespace gp = toolhost::gpu_profile;
namespace fs = std::filesystem;

constexpr const char* kPermission = "gpu-profile.record";

struct settings {
  std::optional<fs::path> recordings;  // from the config; unset means "ask the window"
  gp::profile_options options;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

fs::path expand_home(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (home != nullptr && (path == "~" || path.starts_with("~/")))
    return fs::path(home) / path.substr(path.size() > 1 ? 2 : 1);
  return path;
}

fs::path default_recordings() {
  if (const char* data = std::getenv("XDG_DATA_HOME"); data != nullptr && *data != '\0') {
    return fs::path(data) / "toolhost" / "gpu-recordings";
  }
  return expand_home("~/.local/share/toolhost/gpu-recordings");
}

settings read_settings(const sdk::plugin& plugin) {
  settings s;
  const rapidjson::Value& table = plugin.settings();
  if (auto dir = sdk::string_member(table, "recordings_dir"); dir && !dir->empty()) {
    fs::path p = expand_home(std::string(*dir));
    s.recordings = p.is_absolute() ? p : fs::path(plugin.config_dir()) / p;
  }
  if (auto process = sdk::string_member(table, "process")) s.options.process = std::string(*process);
  if (const rapidjson::Value* hz = sdk::member(table, "refresh_hz");
      hz != nullptr && hz->IsNumber() && hz->GetDouble() > 0) {
    s.options.refresh_hz = hz->GetDouble();
  }
  return s;
}

std::string iso_time(fs::file_time_type t) {
  const auto system = std::chrono::file_clock::to_sys(t);
  const std::time_t secs = std::chrono::system_clock::to_time_t(system);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

sdk::result gpu_profile(const settings& s, sdk::call& call) {
  fs::path folder = s.recordings.value_or(default_recordings());
  gp::profile_options options = s.options;
  if (const std::string bridge = env("ELEVEN_BRIDGE"); !s.recordings && !bridge.empty()) {
    auto file = gp::open_file_from_bridge(bridge, env("ELEVEN_AGENT"), env("ELEVEN_CHAT"));
    if (!file.ok()) return sdk::result::error(std::string(file.status().message()));
    const fs::path open(*file);
    folder = open.parent_path() / "recordings";
    // The open app is the process to look at: "Example" for /Applications/Example.app.
    if (options.process.empty()) options.process = open.stem().string();
  }
  const std::optional<fs::path> recording = gp::newest_recording(folder);
  if (!recording) return sdk::result::error(gp::how_to_record(folder));
  const std::string name = recording->filename().string();
  gp::read_control control;
  control.cancelled = [&call] { return call.cancelled(); };
  control.progress = [&call, &name](uint64_t done, uint64_t total) {
    call.progress(static_cast<double>(done), total > 0 ? static_cast<double>(total) : -1, "reading " + name);
  };
  absl::StatusOr<gp::trace_model> trace = gp::read_trace(*recording, control);
  if (!trace.ok())
    return sdk::result::error("Could not read the newest GPU recording: " + std::string(trace.status().message()));
  const gp::profile p = gp::compute_profile(*trace, options);
  const std::vector<std::string> suggestions = gp::suggest(p);
  std::error_code ec;
  gp::recording_info info{recording->string(), ""};
  if (auto t = fs::last_write_time(*recording, ec); !ec) info.modified = iso_time(t);
  return sdk::result::structured(gp::report_json(p, info, suggestions)).add_text(gp::report_text(p, info, suggestions));
}

constexpr const char* kSettingsSchema = R"json({"type": "object", "properties": {
    "recordings_dir": {"type": "string", "description": "The folder of GPU recordings (relative to the config's folder; ~ is home)"},
    "process": {"type": "string", "description": "The process whose GPU work the profile reads"},
    "refresh_hz": {"type": "number", "description": "The display's refresh rate, for the frame budget (more than 0)"}
}})json";

absl::Status init(sdk::plugin& plugin) {
  if (auto s = plugin.declare_settings(kSettingsSchema); !s.ok()) return s;
  if (auto s = plugin.permission_kind(kPermission, "Run the app to record a GPU trace", TOOLHOST_PERMISSION_ASK);
      !s.ok()) {
    return s;
  }
  auto config = std::make_shared<settings>(read_settings(plugin));
  const settings& s = plugin.keep(config);
  return plugin.tool("gpu_profile")
      .title("GPU profile")
      .description(
          "Reads the newest GPU recording (Metal System Trace) of the open app: frame time, GPU busy time, gaps "
          "between frames, and what the numbers suggest fixing.\n\nNo arguments. On a Mac this covers .app bundles "
          "(Metal System Trace exports); on Linux it reads Nsight Systems SQLite exports and Chrome trace-event JSON "
          "(Chromium, Perfetto, PyTorch) from the recordings folder. If there is no recording yet, it asks the user "
          "to press **Record a GPU run** in the workbench sidebar.")
      .input_schema(R"({"type":"object","properties":{},"additionalProperties":false})")
      .output_schema(gp::kOutputSchema)
      .annotations(R"({"readOnlyHint":true,"openWorldHint":false})")
      .permission(kPermission)
      .concurrent()
      .tasks()  // a large trace takes a while to read
      .handler([&s](const sdk::args&, sdk::call& call) { return gpu_profile(s, call); });
}

}  // namespace

TOOLHOST_PLUGIN("gpu-profile", "1.0.0", "gpu_profile: frame time, GPU busy time and gaps from GPU traces", init)
