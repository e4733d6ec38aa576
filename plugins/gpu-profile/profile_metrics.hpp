// The numbers gpu_profile reports, computed from one trace_model.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace_model.hpp"

namespace toolhost::gpu_profile {

struct profile_options {
  std::string process;    // keep the process whose name contains this (case-insensitive); empty = busiest
  double refresh_hz = 0;  // 0: from the trace's display refreshes, else 60 Hz
};

// Nearest-rank percentiles (the smallest value with at least p% of values at or below it).
struct distribution {
  int64_t count = 0;
  int64_t min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
  double mean = 0;
};
distribution describe(std::vector<int64_t> values);

struct gap_summary {
  distribution stats;
  std::array<int64_t, 6> histogram{};
};

struct track_busy {
  std::string name;
  int64_t busy_ns = 0;
  int64_t intervals = 0;
};

struct label_time {
  std::string name;
  int64_t total_ns = 0;  // summed durations of this label's intervals (they may overlap)
  int64_t count = 0;
};

struct frame_summary {
  std::string source;
  bool steps = false;  // profiler steps rather than displayed frames: no refresh applies
  int64_t count = 0;   // frame times measured (presents - 1)
  double refresh_hz = 0;
  std::string refresh_source;  // "display vsyncs", "settings", "assumed 60 Hz"
  int64_t refresh_period_ns = 0;
  distribution frame_time;
  int64_t missed = 0;            // frames that took more than one refresh (>= 1.5 periods)
  int64_t missed_refreshes = 0;  // refreshes those frames skipped in all
  // Share of the late frames' time the GPU was busy (union), -1 without late frames or GPU work:
  // high means the late frames were GPU-bound, low means they waited on the CPU.
  double late_gpu_busy_percent = -1;
};

struct profile {
  trace_format format = trace_format::chrome_json;
  gpu_source source = gpu_source::none;
  int64_t pid = kUnknown;  // the process analysed, when the trace has several
  std::string process_name;
  std::vector<std::string> other_processes;
  int64_t intervals = 0;
  int64_t span_ns = 0;    // first GPU start to last GPU end
  int64_t busy_ns = 0;    // union of intervals
  int64_t summed_ns = 0;  // plain sum of durations, to show the overlap
  std::optional<int64_t> machine_active_ns;
  std::vector<track_busy> tracks;  // busiest first, at most kMaxListed
  int64_t tracks_total = 0;
  std::vector<label_time> top_work;       // longest first, at most kMaxListed
  gap_summary gpu_gaps;                   // between merged GPU busy runs
  std::optional<gap_summary> frame_gaps;  // between the GPU work of consecutive frame numbers
  std::optional<frame_summary> frames;
  std::optional<distribution> cpu_to_gpu;
  std::vector<std::string> notes;
};

inline constexpr size_t kMaxListed = 8;

profile compute_profile(const trace_model& trace, const profile_options& options);

}  // namespace toolhost::gpu_profile
