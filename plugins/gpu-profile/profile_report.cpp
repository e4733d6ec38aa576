#include "profile_report.hpp"

#include <cstdio>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "interval_union.hpp"
#include "suggestions.hpp"

namespace toolhost::gpu_profile {

const char* const kOutputSchema = R"schema({
  "type": "object",
  "definitions": {
    "distribution": {
      "type": "object",
      "description": "Nanoseconds; percentiles by nearest rank.",
      "properties": {
        "count": {"type": "integer"}, "min_ns": {"type": "integer"}, "p50_ns": {"type": "integer"},
        "p95_ns": {"type": "integer"}, "p99_ns": {"type": "integer"}, "max_ns": {"type": "integer"},
        "mean_ns": {"type": "number"}
      },
      "required": ["count", "min_ns", "p50_ns", "p95_ns", "p99_ns", "max_ns", "mean_ns"]
    },
    "gaps": {
      "type": "object",
      "properties": {
        "stats": {"$ref": "#/definitions/distribution"},
        "histogram": {"type": "array", "items": {"type": "object",
          "properties": {"bin": {"type": "string"}, "count": {"type": "integer"}}, "required": ["bin", "count"]}}
      },
      "required": ["stats", "histogram"]
    }
  },
  "properties": {
    "recording": {"type": "object", "properties": {
      "path": {"type": "string"}, "modified": {"type": "string"},
      "format": {"type": "string", "enum": ["xctrace-xml", "chrome-trace-json", "nsys-sqlite"]}},
      "required": ["path", "format"]},
    "process": {"type": "object", "properties": {
      "pid": {"type": ["integer", "null"]}, "name": {"type": "string"},
      "others": {"type": "array", "items": {"type": "string"}}}},
    "gpu": {"type": "object", "properties": {
      "source": {"type": "string", "enum": ["device", "gpu-process", "none"],
                 "description": "device: GPU timestamps; gpu-process: the CPU threads of a GPU process"},
      "intervals": {"type": "integer"},
      "span_ns": {"type": "integer", "description": "first GPU start to last GPU end"},
      "busy_ns": {"type": "integer", "description": "union of the GPU intervals"},
      "summed_ns": {"type": "integer", "description": "plain sum of durations (counts overlap twice)"},
      "busy_percent": {"type": "number"},
      "machine_active_ns": {"type": ["integer", "null"]},
      "tracks": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "busy_ns": {"type": "integer"}, "intervals": {"type": "integer"}}}},
      "tracks_total": {"type": "integer"},
      "top_work": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "total_ns": {"type": "integer"}, "count": {"type": "integer"}}}}},
      "required": ["source", "intervals", "span_ns", "busy_ns", "summed_ns"]},
    "gaps": {"type": "object", "properties": {
      "gpu": {"$ref": "#/definitions/gaps"},
      "frames": {"oneOf": [{"$ref": "#/definitions/gaps"}, {"type": "null"}]}}},
    "frames": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {
      "source": {"type": "string"}, "count": {"type": "integer"}, "refresh_hz": {"type": "number"},
      "kind": {"type": "string", "enum": ["frames", "steps"],
               "description": "steps: profiler steps of a compute loop; the refresh fields do not apply"},
      "refresh_source": {"type": "string"}, "refresh_period_ns": {"type": "integer"},
      "frame_time": {"$ref": "#/definitions/distribution"},
      "missed": {"type": "integer"}, "missed_refreshes": {"type": "integer"},
      "late_gpu_busy_percent": {"type": ["number", "null"],
        "description": "GPU busy share of the missed frames' time: high = GPU-bound, low = waiting on the CPU"}},
      "required": ["count", "frame_time", "missed"]}]},
    "cpu_to_gpu": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/distribution"}]},
    "suggestions": {"type": "array", "items": {"type": "string"}},
    "notes": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["recording", "gpu", "gaps", "frames", "cpu_to_gpu", "suggestions"]
})schema";

namespace {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

void key(json_writer& w, const char* k) { w.Key(k); }
void str(json_writer& w, const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }

void write_distribution(json_writer& w, const distribution& d) {
  w.StartObject();
  key(w, "count"), w.Int64(d.count);
  key(w, "min_ns"), w.Int64(d.min);
  key(w, "p50_ns"), w.Int64(d.p50);
  key(w, "p95_ns"), w.Int64(d.p95);
  key(w, "p99_ns"), w.Int64(d.p99);
  key(w, "max_ns"), w.Int64(d.max);
  key(w, "mean_ns"), w.Double(d.mean);
  w.EndObject();
}

void write_gaps(json_writer& w, const gap_summary& g) {
  w.StartObject();
  key(w, "stats"), write_distribution(w, g.stats);
  key(w, "histogram");
  w.StartArray();
  for (size_t i = 0; i < g.histogram.size(); ++i) {
    w.StartObject();
    key(w, "bin"), w.String(kGapBinLabels[i]);
    key(w, "count"), w.Int64(g.histogram[i]);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

// [{"name":..,"<a>":..,"<b>":..}] for a list of named records with two integer fields.
template <class T>
void write_named(json_writer& w, const std::vector<T>& list, const char* a, int64_t T::*a_field, const char* b,
                 int64_t T::*b_field) {
  w.StartArray();
  for (const T& item : list) {
    w.StartObject();
    key(w, "name"), str(w, item.name);
    key(w, a), w.Int64(item.*a_field);
    key(w, b), w.Int64(item.*b_field);
    w.EndObject();
  }
  w.EndArray();
}

void write_strings(json_writer& w, const std::vector<std::string>& list) {
  w.StartArray();
  for (const auto& s : list) str(w, s);
  w.EndArray();
}

const char* source_name(gpu_source s) {
  switch (s) {
    case gpu_source::device: return "device";
    case gpu_source::gpu_process: return "gpu-process";
    case gpu_source::none: return "none";
  }
  return "none";
}

std::string ms3(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace

std::string report_json(const profile& p, const recording_info& recording,
                        const std::vector<std::string>& suggestions) {
  rapidjson::StringBuffer buffer;
  json_writer w(buffer);
  w.StartObject();
  key(w, "recording");
  w.StartObject();
  key(w, "path"), str(w, recording.path);
  if (!recording.modified.empty()) key(w, "modified"), str(w, recording.modified);
  key(w, "format"), str(w, std::string(format_name(p.format)));
  w.EndObject();

  key(w, "process");
  w.StartObject();
  key(w, "pid");
  if (p.pid == kUnknown)
    w.Null();
  else
    w.Int64(p.pid);
  key(w, "name"), str(w, p.process_name);
  key(w, "others"), write_strings(w, p.other_processes);
  w.EndObject();

  key(w, "gpu");
  w.StartObject();
  key(w, "source"), w.String(source_name(p.source));
  key(w, "intervals"), w.Int64(p.intervals);
  key(w, "span_ns"), w.Int64(p.span_ns);
  key(w, "busy_ns"), w.Int64(p.busy_ns);
  key(w, "summed_ns"), w.Int64(p.summed_ns);
  key(w, "busy_percent"),
      w.Double(p.span_ns > 0 ? 100.0 * static_cast<double>(p.busy_ns) / static_cast<double>(p.span_ns) : 0.0);
  key(w, "machine_active_ns");
  if (p.machine_active_ns)
    w.Int64(*p.machine_active_ns);
  else
    w.Null();
  key(w, "tracks");
  write_named(w, p.tracks, "busy_ns", &track_busy::busy_ns, "intervals", &track_busy::intervals);
  key(w, "tracks_total"), w.Int64(p.tracks_total);
  key(w, "top_work");
  write_named(w, p.top_work, "total_ns", &label_time::total_ns, "count", &label_time::count);
  w.EndObject();

  key(w, "gaps");
  w.StartObject();
  key(w, "gpu"), write_gaps(w, p.gpu_gaps);
  key(w, "frames");
  if (p.frame_gaps)
    write_gaps(w, *p.frame_gaps);
  else
    w.Null();
  w.EndObject();

  key(w, "frames");
  if (!p.frames) {
    w.Null();
  } else {
    const frame_summary& f = *p.frames;
    w.StartObject();
    key(w, "source"), str(w, f.source);
    key(w, "kind"), w.String(f.steps ? "steps" : "frames");
    key(w, "count"), w.Int64(f.count);
    key(w, "refresh_hz"), w.Double(f.refresh_hz);
    key(w, "refresh_source"), str(w, f.refresh_source);
    key(w, "refresh_period_ns"), w.Int64(f.refresh_period_ns);
    key(w, "frame_time"), write_distribution(w, f.frame_time);
    key(w, "missed"), w.Int64(f.missed);
    key(w, "missed_refreshes"), w.Int64(f.missed_refreshes);
    key(w, "late_gpu_busy_percent");
    if (f.late_gpu_busy_percent < 0)
      w.Null();
    else
      w.Double(f.late_gpu_busy_percent);
    w.EndObject();
  }
  key(w, "cpu_to_gpu");
  if (p.cpu_to_gpu)
    write_distribution(w, *p.cpu_to_gpu);
  else
    w.Null();
  key(w, "suggestions"), write_strings(w, suggestions);
  key(w, "notes"), write_strings(w, p.notes);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string report_text(const profile& p, const recording_info& recording,
                        const std::vector<std::string>& suggestions) {
  std::string t = "GPU recording " + recording.path + " (" + std::string(format_name(p.format)) + ")";
  if (!p.process_name.empty()) t += ", process " + p.process_name;
  t += ".\n";
  if (p.frames && p.frames->steps) {
    const frame_summary& f = *p.frames;
    t += "Step time over " + std::to_string(f.count) + " steps (" + f.source + "): p50 " + ms3(f.frame_time.p50) +
         " ms, p95 " + ms3(f.frame_time.p95) + " ms, p99 " + ms3(f.frame_time.p99) + " ms.\n";
  } else if (p.frames) {
    const frame_summary& f = *p.frames;
    t += "Frame time over " + std::to_string(f.count) + " frames (" + f.source + "): p50 " + ms3(f.frame_time.p50) +
         " ms, p95 " + ms3(f.frame_time.p95) + " ms, p99 " + ms3(f.frame_time.p99) + " ms; " +
         std::to_string(f.missed) + " missed the " + std::to_string(static_cast<int>(f.refresh_hz + 0.5)) +
         " Hz refresh (" + f.refresh_source + ").\n";
  } else {
    t += "No frame markers in this recording, so no frame time.\n";
  }
  if (p.intervals > 0) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.1f",
                  p.span_ns > 0 ? 100.0 * static_cast<double>(p.busy_ns) / static_cast<double>(p.span_ns) : 0.0);
    t += std::string(p.source == gpu_source::device ? "GPU busy " : "GPU process busy ") + ms3(p.busy_ns) + " ms of " +
         ms3(p.span_ns) + " ms (" + pct + "%), the union of " + std::to_string(p.intervals) +
         " intervals (their plain sum is " + ms3(p.summed_ns) + " ms).\n";
    t += "Gaps between GPU work: " + std::to_string(p.gpu_gaps.stats.count);
    if (p.gpu_gaps.stats.count > 0) {
      t += ", p50 " + human_duration(p.gpu_gaps.stats.p50) + ", max " + human_duration(p.gpu_gaps.stats.max) + " (";
      for (size_t i = 0; i < p.gpu_gaps.histogram.size(); ++i) {
        t += std::string(i ? ", " : "") + kGapBinLabels[i] + ": " + std::to_string(p.gpu_gaps.histogram[i]);
      }
      t += ")";
    }
    t += ".\n";
  } else {
    t += "No GPU work in this recording.\n";
  }
  if (!p.top_work.empty()) {
    t += "Longest GPU work:";
    for (size_t i = 0; i < p.top_work.size() && i < 3; ++i) {
      t += std::string(i ? "," : "") + " " + p.top_work[i].name + " " + ms3(p.top_work[i].total_ns) + " ms in " +
           std::to_string(p.top_work[i].count);
    }
    t += ".\n";
  }
  if (p.frame_gaps) {
    t += "Gaps between frames' GPU work: p50 " + human_duration(p.frame_gaps->stats.p50) + ", max " +
         human_duration(p.frame_gaps->stats.max) + ".\n";
  }
  if (p.cpu_to_gpu) {
    t += "CPU to GPU latency: p50 " + human_duration(p.cpu_to_gpu->p50) + ", p95 " + human_duration(p.cpu_to_gpu->p95) +
         " over " + std::to_string(p.cpu_to_gpu->count) + " submissions.\n";
  }
  for (const auto& s : suggestions) t += "- " + s + "\n";
  for (const auto& n : p.notes) t += "Note: " + n + "\n";
  return t;
}

}  // namespace toolhost::gpu_profile
