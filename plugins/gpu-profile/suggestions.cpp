#include "suggestions.hpp"

#include <cstdio>

#include "interval_union.hpp"

namespace toolhost::gpu_profile {
namespace {

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

}  // namespace

std::string human_duration(int64_t ns) {
  char buf[48];
  const double v = static_cast<double>(ns);
  if (ns >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1e6);
  else if (ns >= 1'000)
    std::snprintf(buf, sizeof buf, "%.1f us", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  return buf;
}

std::vector<std::string> suggest(const profile& p) {
  std::vector<std::string> out;
  const double busy_share = p.span_ns > 0 ? static_cast<double>(p.busy_ns) / static_cast<double>(p.span_ns) : 0;
  const bool device = p.source == gpu_source::device;
  const std::string what = device ? "The GPU" : "The GPU process";

  if (p.frames && p.frames->steps) {
    const distribution& d = p.frames->frame_time;
    if (d.count >= 5 && 2 * d.p99 >= 3 * d.p50) {
      out.push_back("Step time is uneven: p99 " + human_duration(d.p99) + " against p50 " + human_duration(d.p50) +
                    "; look at what the slow steps do differently (data loading, synchronisation, recompilation).");
    }
    if (p.intervals > 0 && busy_share < 0.5) {
      out.push_back(what + " is busy only " + percent(busy_share, 1) +
                    " of the time: the steps wait on the CPU side (input pipeline, Python overhead, launches); "
                    "overlap them with GPU work or make the kernels larger.");
    }
  } else if (p.frames) {
    const frame_summary& f = *p.frames;
    const double missed_share = f.count > 0 ? static_cast<double>(f.missed) / static_cast<double>(f.count) : 0;
    if (f.missed == 0) {
      out.push_back("No frame missed the " + std::to_string(static_cast<int>(f.refresh_hz + 0.5)) +
                    " Hz refresh (none took 1.5 refresh periods or more): p50 " + human_duration(f.frame_time.p50) +
                    ", p99 " + human_duration(f.frame_time.p99) + " against a " + human_duration(f.refresh_period_ns) +
                    " budget.");
      if (p.intervals > 0 && busy_share < 0.5) {
        out.push_back(what + " is busy " + percent(busy_share, 1) +
                      " of the time, so there is headroom for more work per frame.");
      }
    } else {
      out.push_back(std::to_string(f.missed) + " of " + std::to_string(f.count) + " frames (" +
                    percent(static_cast<double>(f.missed), static_cast<double>(f.count)) +
                    ") missed the refresh; p99 frame time is " + human_duration(f.frame_time.p99) + " against a " +
                    human_duration(f.refresh_period_ns) + " budget.");
      const double late_busy = f.late_gpu_busy_percent / 100.0;
      if (f.late_gpu_busy_percent >= 0 && late_busy >= 0.7) {
        out.push_back(what + " was busy " + percent(late_busy, 1) +
                      " of the late frames' time, so they are GPU-bound: cut the GPU work of those frames, starting "
                      "with the longest work listed.");
      } else if (f.late_gpu_busy_percent >= 0) {
        out.push_back(what + " was busy only " + percent(late_busy, 1) +
                      " of the late frames' time, so they waited on the CPU side: look at what the app does between "
                      "frames, and submit each frame's work earlier.");
      }
    }
  } else if (p.intervals > 0) {
    out.push_back(
        "The trace has no frame markers, so there is no frame time; record presented frames (Metal "
        "displayed surfaces, NVTX ranges named \"Frame\", or profiler steps) to get it.");
  }

  if (!p.top_work.empty() && p.summed_ns > 0 && 2 * p.top_work.front().total_ns >= p.summed_ns &&
      p.top_work.size() > 1) {
    out.push_back("\"" + p.top_work.front().name + "\" takes " +
                  percent(static_cast<double>(p.top_work.front().total_ns), static_cast<double>(p.summed_ns)) +
                  " of all GPU work time; optimise it first.");
  }

  const auto& h = p.gpu_gaps.histogram;
  const int64_t short_gaps = h[0] + h[1] + h[2];
  const int64_t long_gaps = h[5];
  if (p.gpu_gaps.stats.count >= 20 && 2 * short_gaps >= p.gpu_gaps.stats.count) {
    out.push_back(std::to_string(short_gaps) + " of " + std::to_string(p.gpu_gaps.stats.count) +
                  " idle gaps are under 20 us: the work comes in many small pieces, so batching them into fewer, "
                  "larger submissions (or fusing kernels) would remove launch overhead.");
  }
  // Long idle gaps matter when frames are late for want of GPU work, not when the GPU was the limit.
  const bool frames_late = !p.frames || (p.frames->missed > 0 && p.frames->late_gpu_busy_percent < 70);
  if (long_gaps > 0 && busy_share < 0.8 && frames_late) {
    out.push_back(std::to_string(long_gaps) + " idle gaps last 1 ms or more (longest " +
                  human_duration(p.gpu_gaps.stats.max) +
                  "): the GPU waits for the CPU there; overlap CPU preparation with GPU work (more frames or "
                  "batches in flight, asynchronous copies).");
  }
  if (p.cpu_to_gpu && p.cpu_to_gpu->p95 >= 1'000'000) {
    out.push_back("Work waits " + human_duration(p.cpu_to_gpu->p95) +
                  " (p95) between submission and the GPU starting it: the queue is backed up or the submission "
                  "is blocked; submit less ahead, or split long command buffers.");
  }
  if (p.machine_active_ns && *p.machine_active_ns > 0 && p.busy_ns > 0 && *p.machine_active_ns > 2 * p.busy_ns) {
    out.push_back("The whole machine kept the GPU active " + human_duration(*p.machine_active_ns) +
                  ", more than twice this app's " + human_duration(p.busy_ns) +
                  ": other processes compete for the GPU.");
  }
  if (out.empty()) out.push_back("Nothing stands out: the GPU is neither saturated nor starved in this recording.");
  return out;
}

}  // namespace toolhost::gpu_profile
