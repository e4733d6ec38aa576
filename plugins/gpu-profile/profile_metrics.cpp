#include "profile_metrics.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>

#include "interval_union.hpp"

namespace toolhost::gpu_profile {
namespace {

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

int64_t nearest_rank(const std::vector<int64_t>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * n));
  if (rank < 1) rank = 1;
  return sorted[std::min(rank, sorted.size()) - 1];
}

gap_summary summarize_gaps(const std::vector<int64_t>& gaps) {
  return gap_summary{describe(gaps), gap_histogram(gaps)};
}

std::string process_label(const trace_model& trace, int64_t pid) {
  auto it = trace.process_names.find(pid);
  std::string name = it != trace.process_names.end() ? it->second : "";
  if (pid == kUnknown) return name;
  return name.empty() ? "pid " + std::to_string(pid) : name + " (" + std::to_string(pid) + ")";
}

// Picks the process to analyse: the one the settings name, else the one with the most GPU time.
int64_t choose_pid(const trace_model& trace, const profile_options& options, profile& out) {
  std::map<int64_t, std::vector<span>> by_pid;
  for (const gpu_interval& i : trace.intervals) by_pid[i.pid].emplace_back(i.start_ns, i.end_ns);
  if (by_pid.size() <= 1) return by_pid.empty() ? kUnknown : by_pid.begin()->first;

  std::vector<std::pair<int64_t, int64_t>> busy;  // (busy, pid)
  for (auto& [pid, spans] : by_pid) busy.emplace_back(total_length(merge_spans(spans)), pid);
  std::sort(busy.rbegin(), busy.rend());

  int64_t chosen = busy.front().second;
  if (!options.process.empty()) {
    const std::string want = lower(options.process);
    auto match = std::find_if(busy.begin(), busy.end(), [&](const auto& b) {
      return lower(process_label(trace, b.second)).find(want) != std::string::npos;
    });
    if (match != busy.end()) {
      chosen = match->second;
    } else {
      out.notes.push_back("No process in the trace matches \"" + options.process +
                          "\"; analysed the one with the most GPU time instead.");
    }
  }
  for (const auto& [b, pid] : busy) {
    if (pid != chosen && out.other_processes.size() < kMaxListed)
      out.other_processes.push_back(process_label(trace, pid));
  }
  return chosen;
}

// Busy time of the merged runs inside [from, to).
int64_t busy_within(const std::vector<span>& merged, int64_t from, int64_t to) {
  int64_t busy = 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), span{from, from},
                             [](const span& a, const span& b) { return a.second < b.first; });
  for (; it != merged.end() && it->first < to; ++it) busy += std::min(to, it->second) - std::max(from, it->first);
  return busy;
}

std::optional<frame_summary> summarize_frames(const trace_model& trace, int64_t pid, const profile_options& options,
                                              const std::vector<span>& merged) {
  std::vector<int64_t> times;
  for (const present_event& p : trace.presents) {
    if (pid == kUnknown || p.pid == pid || p.pid == kUnknown) times.push_back(p.time_ns);
  }
  // A trace whose presents all belong to other processes (a compositor): use them all.
  if (times.empty()) {
    for (const present_event& p : trace.presents) times.push_back(p.time_ns);
  }
  if (times.size() < 2) return std::nullopt;
  std::sort(times.begin(), times.end());

  frame_summary f;
  f.source = trace.present_source;
  f.steps = trace.presents_are_steps;
  std::vector<int64_t> deltas;
  for (size_t i = 1; i < times.size(); ++i) deltas.push_back(times[i] - times[i - 1]);

  if (options.refresh_hz > 0) {
    f.refresh_hz = options.refresh_hz;
    f.refresh_source = "settings";
  } else if (trace.vsyncs_ns.size() >= 2) {
    std::vector<int64_t> v = trace.vsyncs_ns;
    std::sort(v.begin(), v.end());
    std::vector<int64_t> periods;
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i] > v[i - 1]) periods.push_back(v[i] - v[i - 1]);
    }
    if (!periods.empty()) {
      std::sort(periods.begin(), periods.end());
      f.refresh_hz = 1e9 / static_cast<double>(periods[periods.size() / 2]);
      f.refresh_source = "display vsyncs";
    }
  }
  if (f.refresh_hz <= 0) {
    f.refresh_hz = 60;
    f.refresh_source = "assumed 60 Hz";
  }
  f.refresh_period_ns = static_cast<int64_t>(std::llround(1e9 / f.refresh_hz));
  int64_t late_time = 0, late_busy = 0;
  for (size_t i = 0; i < deltas.size(); ++i) {
    const int64_t d = deltas[i];
    // A frame missed the refresh when it took 1.5 refresh periods or more.
    if (static_cast<double>(d) >= 1.5 * static_cast<double>(f.refresh_period_ns)) {
      ++f.missed;
      f.missed_refreshes += std::llround(static_cast<double>(d) / static_cast<double>(f.refresh_period_ns)) - 1;
      late_time = saturating_add(late_time, d);
      late_busy = saturating_add(late_busy, busy_within(merged, times[i], times[i + 1]));
    }
  }
  if (late_time > 0 && !merged.empty()) {
    f.late_gpu_busy_percent = 100.0 * static_cast<double>(late_busy) / static_cast<double>(late_time);
  }
  f.frame_time = describe(std::move(deltas));
  f.count = f.frame_time.count;
  return f;
}

}  // namespace

distribution describe(std::vector<int64_t> values) {
  distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = static_cast<int64_t>(values.size());
  d.min = values.front();
  d.max = values.back();
  d.p50 = nearest_rank(values, 50);
  d.p95 = nearest_rank(values, 95);
  d.p99 = nearest_rank(values, 99);
  long double sum = 0;  // int64 could overflow on absurd inputs
  for (int64_t v : values) sum += static_cast<long double>(v);
  d.mean = static_cast<double>(sum / static_cast<long double>(values.size()));
  return d;
}

profile compute_profile(const trace_model& trace, const profile_options& options) {
  profile out;
  out.format = trace.format;
  out.source = trace.source;
  out.machine_active_ns = trace.machine_active_ns;
  out.notes = trace.notes;
  out.pid = choose_pid(trace, options, out);
  out.process_name = process_label(trace, out.pid);

  std::vector<span> all;
  std::map<uint32_t, std::vector<span>> by_track;
  std::map<uint32_t, label_time> by_label;
  std::map<int64_t, span> by_frame;
  std::vector<int64_t> latencies;
  for (const gpu_interval& i : trace.intervals) {
    if (i.pid != out.pid) continue;
    all.emplace_back(i.start_ns, i.end_ns);
    by_track[i.track].emplace_back(i.start_ns, i.end_ns);
    label_time& l = by_label[i.label];
    l.total_ns = saturating_add(l.total_ns, i.end_ns - i.start_ns);
    ++l.count;
    out.summed_ns = saturating_add(out.summed_ns, i.end_ns - i.start_ns);
    if (i.frame != kUnknown) {
      auto [it, added] = by_frame.try_emplace(i.frame, span{i.start_ns, i.end_ns});
      if (!added) it->second = {std::min(it->second.first, i.start_ns), std::max(it->second.second, i.end_ns)};
    }
    if (i.cpu_to_gpu_ns != kUnknown) latencies.push_back(i.cpu_to_gpu_ns);
  }
  out.intervals = static_cast<int64_t>(all.size());

  const std::vector<span> merged = merge_spans(std::move(all));
  out.busy_ns = total_length(merged);
  if (!merged.empty()) {
    int64_t last = 0;
    for (const span& s : merged) last = std::max(last, s.second);
    out.span_ns = last - merged.front().first;
  }
  out.gpu_gaps = summarize_gaps(gaps_between(merged));

  for (auto& [track, spans] : by_track) {
    const auto n = static_cast<int64_t>(spans.size());
    out.tracks.push_back({trace.tracks[track], total_length(merge_spans(std::move(spans))), n});
  }
  out.tracks_total = static_cast<int64_t>(out.tracks.size());
  std::sort(out.tracks.begin(), out.tracks.end(), [](const auto& a, const auto& b) { return a.busy_ns > b.busy_ns; });
  if (out.tracks.size() > kMaxListed) out.tracks.resize(kMaxListed);

  for (auto& [label, time] : by_label) {
    time.name = trace.labels[label];
    out.top_work.push_back(time);
  }
  std::sort(out.top_work.begin(), out.top_work.end(),
            [](const auto& a, const auto& b) { return a.total_ns > b.total_ns; });
  if (out.top_work.size() > kMaxListed) out.top_work.resize(kMaxListed);

  // Frames in frame-number order; the gap is from one frame's last GPU work to the next one's first.
  if (by_frame.size() >= 2) {
    std::vector<int64_t> gaps;
    const span* previous = nullptr;
    for (const auto& [frame, s] : by_frame) {
      if (previous != nullptr) gaps.push_back(std::max<int64_t>(0, s.first - previous->second));
      previous = &s;
    }
    out.frame_gaps = summarize_gaps(gaps);
  }
  out.frames = summarize_frames(trace, out.pid, options, merged);
  if (!latencies.empty()) out.cpu_to_gpu = describe(std::move(latencies));
  return out;
}

}  // namespace toolhost::gpu_profile
