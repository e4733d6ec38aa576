// One interval model for every GPU trace format the readers understand.
//
// A reader turns a Metal System Trace export, a Chrome trace-event file or an Nsight Systems
// database into the same lists: GPU work as [start, end) intervals on named tracks (a channel,
// a stream, a thread), the moments frames reached the screen, display refreshes when the trace
// has them, and the machine-wide GPU active time when the trace records it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace toolhost::gpu_profile {

enum class trace_format { xctrace_xml, chrome_json, nsys_sqlite };

std::string_view format_name(trace_format f);

// -1 marks "the trace does not say" for the optional integer fields below.
inline constexpr int64_t kUnknown = -1;

struct gpu_interval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;                 // exclusive; end_ns >= start_ns
  uint32_t track = 0;                 // index into trace_model::tracks
  uint32_t label = 0;                 // index into trace_model::labels
  int64_t pid = kUnknown;             // the process the work belongs to
  int64_t frame = kUnknown;           // frame number, when the trace assigns one
  int64_t cpu_to_gpu_ns = kUnknown;   // submit (or launch) to GPU start
  int64_t command_buffer = kUnknown;  // Metal cmdbuffer-id, to join with its submission
};

struct present_event {
  int64_t time_ns = 0;
  int64_t pid = kUnknown;
};

// Where the intervals came from: real device timestamps, or the CPU threads of a GPU process
// (Chromium without GPU tracing records only the latter).
enum class gpu_source { none, device, gpu_process };

class trace_model {
 public:
  trace_format format = trace_format::chrome_json;
  gpu_source source = gpu_source::none;
  std::vector<std::string> tracks;
  std::vector<std::string> labels;
  std::vector<gpu_interval> intervals;
  std::vector<present_event> presents;
  std::string present_source;                // which events gave the frames, for the report
  bool presents_are_steps = false;           // profiler steps (training loops), not frames on a display
  std::vector<int64_t> vsyncs_ns;            // display refreshes, when recorded
  std::optional<int64_t> machine_active_ns;  // whole-machine GPU active time (Metal)
  std::map<int64_t, std::string> process_names;
  std::vector<std::string> notes;  // things the reader skipped or assumed

  uint32_t track_id(std::string_view name) { return intern(tracks, track_index_, name); }
  uint32_t label_id(std::string_view name) { return intern(labels, label_index_, name); }

 private:
  static uint32_t intern(std::vector<std::string>& names, std::unordered_map<std::string, uint32_t>& index,
                         std::string_view name) {
    auto [it, added] = index.try_emplace(std::string(name), static_cast<uint32_t>(names.size()));
    if (added) names.emplace_back(name);
    return it->second;
  }

  std::unordered_map<std::string, uint32_t> track_index_;
  std::unordered_map<std::string, uint32_t> label_index_;
};

// True for names that mark one frame each: PyTorch profiler steps, NVTX "frame" ranges.
bool is_frame_range_name(std::string_view name);

}  // namespace toolhost::gpu_profile
