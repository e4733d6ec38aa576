// Reads Chrome trace-event JSON (Chromium, Perfetto's JSON export, PyTorch's profiler) with
// RapidJSON's SAX reader, so a large file is streamed, never held as a document.
//
// Both forms are accepted: {"traceEvents":[...], ...} and a bare [...] array. The format allows
// the bare array to lack its closing ']' (a writer that was killed), so that one truncation is
// tolerated; anything else cut short is an error. ts and dur are microseconds.
//
// What counts as GPU work:
// - device events when there are any: PyTorch's `kernel`, `gpu_memcpy`, `gpu_memset` categories;
// - otherwise every slice on the threads of Chromium's "GPU Process" (its compositor draws
//   there; Chromium records no device timestamps unless GPU tracing is on).
// Frames: Chromium's Display::FrameDisplayed, else the DevTools DrawFrame marker, else
// PyTorch's ProfilerStep#N slices or any slice named like a frame.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include <rapidjson/error/en.h>
#include <rapidjson/filereadstream.h>
#include <rapidjson/reader.h>

#include "trace_reader.hpp"

namespace toolhost::gpu_profile {
namespace {

// One event with the fields the readers use.
struct raw_event {
  std::string name, cat, ph;
  double ts = NAN, dur = NAN;
  int64_t pid = 0, tid = 0;
  std::string args_name;           // args.name of metadata events
  int64_t correlation = kUnknown;  // args.correlation (PyTorch) links a launch to its kernel
};

bool is_device_category(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Kernel" || cat == "Memcpy" ||
         cat == "Memset";
}
bool is_launch_category(std::string_view cat) {
  return cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" || cat == "Driver";
}

// Times beyond +-2^62 ns (146 years) are not timestamps; keeping below that also keeps
// start + duration inside int64.
constexpr double kMaxNs = 4.6e18;

std::optional<int64_t> to_ns(double us) {
  const double ns = us * 1000.0;
  if (!std::isfinite(ns) || std::fabs(ns) > kMaxNs) return std::nullopt;
  return std::llround(ns);
}

// An id written as a number; absurd values are clamped, they only need to stay distinct.
int64_t whole(double d) {
  if (!std::isfinite(d)) return 0;
  return static_cast<int64_t>(std::clamp(d, -9.0e18, 9.0e18));
}

// A complete slice, kept compactly until the metadata (which Chromium writes last) is known.
struct slice {
  int64_t start_ns, end_ns, pid, tid;
  uint32_t label;
  bool device;
  int64_t correlation;
};

class chrome_handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, chrome_handler> {
 public:
  chrome_handler(const read_control& control, const rapidjson::FileReadStream& stream, uint64_t total)
      : control_(control), stream_(stream), total_(total) {}

  // Depth counts open objects and arrays; events sit at events_depth_ + 1 inside the array.
  bool StartObject() {
    ++depth_;
    if (depth_ == 1 && !array_form_) top_object_ = true;
    if (in_events() && depth_ == events_depth_ + 1) {
      event_ = raw_event{};
      in_event_ = true;
    }
    if (in_event_ && depth_ == events_depth_ + 2 && key_ == "args") in_args_ = true;
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    if (in_args_ && depth_ == events_depth_ + 2) in_args_ = false;
    if (in_event_ && depth_ == events_depth_ + 1) {
      in_event_ = false;
      finish_event();
      // Returning false stops the parse; read_chrome_json turns that into Cancelled.
      if ((events_ & 0xFFF) == 0 && !keep_going()) return false;
    }
    --depth_;
    return true;
  }
  bool StartArray() {
    ++depth_;
    if (depth_ == 1) {
      array_form_ = true;
      events_depth_ = 1;
    } else if (top_object_ && depth_ == 2 && key_ == "traceEvents") {
      events_depth_ = 2;
    }
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    if (depth_ == events_depth_ && in_events_array()) events_closed_ = true;
    --depth_;
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_.assign(s, n);
    return true;
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    std::string_view v(s, n);
    if (field_level()) {
      if (key_ == "name")
        event_.name = v;
      else if (key_ == "cat")
        event_.cat = v;
      else if (key_ == "ph")
        event_.ph = v;
      else if (key_ == "pid")
        event_.pid = id_of(v);
      else if (key_ == "tid")
        event_.tid = id_of(v);
      else if (key_ == "ts")
        event_.ts = std::strtod(std::string(v).c_str(), nullptr);
    } else if (args_level() && key_ == "name") {
      event_.args_name = v;
    }
    return true;
  }
  bool Double(double d) { return number(d); }
  bool Int(int i) { return number(i); }
  bool Uint(unsigned u) { return number(u); }
  bool Int64(int64_t i) { return number(static_cast<double>(i)); }
  bool Uint64(uint64_t u) { return number(static_cast<double>(u)); }
  bool Null() { return true; }
  bool Bool(bool) { return true; }

  bool events_seen() const { return events_depth_ != 0; }
  bool was_cancelled() const { return cancelled_; }
  bool array_form() const { return array_form_; }
  bool inside_event() const { return in_event_; }
  int depth() const { return depth_; }
  int64_t event_count() const { return events_; }

  trace_model build();

 private:
  bool in_events() const { return events_depth_ != 0 && !events_closed_; }
  bool in_events_array() const { return events_depth_ != 0; }
  bool field_level() const { return in_event_ && depth_ == events_depth_ + 1; }
  bool args_level() const { return in_args_ && depth_ == events_depth_ + 2; }

  bool number(double d) {
    if (field_level()) {
      if (key_ == "ts")
        event_.ts = d;
      else if (key_ == "dur")
        event_.dur = d;
      else if (key_ == "pid")
        event_.pid = whole(d);
      else if (key_ == "tid")
        event_.tid = whole(d);
    } else if (args_level() && key_ == "correlation") {
      event_.correlation = whole(d);
    }
    return true;
  }

  // String pids and tids ("GPU 0", "stream 7") get stable negative numbers of their own.
  int64_t id_of(std::string_view text) {
    auto [it, added] = string_ids_.try_emplace(std::string(text), -2 - static_cast<int64_t>(string_ids_.size()));
    if (added) string_names_[it->second] = std::string(text);
    return it->second;
  }

  void finish_event();

  bool keep_going() {
    if (control_.progress) control_.progress(stream_.Tell(), total_);
    cancelled_ = control_.cancelled && control_.cancelled();
    return !cancelled_;
  }

  const read_control& control_;
  const rapidjson::FileReadStream& stream_;
  uint64_t total_;
  bool cancelled_ = false;

  int depth_ = 0;
  int events_depth_ = 0;
  bool array_form_ = false, top_object_ = false, events_closed_ = false;
  bool in_event_ = false, in_args_ = false;
  std::string key_;
  raw_event event_;
  int64_t events_ = 0;
  int64_t out_of_range_ = 0;
  bool seen_device_ = false;  // events skipped for a timestamp no clock gives

  std::unordered_map<std::string, int64_t> string_ids_;
  std::map<int64_t, std::string> string_names_;
  std::map<int64_t, std::string> process_names_;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names_;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, uint32_t>>> open_;  // B without E
  std::vector<slice> slices_;
  std::unordered_map<int64_t, int64_t> launches_;            // correlation -> launch start
  std::map<std::string, std::vector<int64_t>> frame_marks_;  // marker kind -> times
  trace_model trace_;
};

void chrome_handler::finish_event() {
  ++events_;
  raw_event& e = event_;
  if (e.ph == "M") {
    if (e.name == "process_name") process_names_[e.pid] = e.args_name;
    if (e.name == "thread_name") thread_names_[{e.pid, e.tid}] = e.args_name;
    return;
  }
  if (std::isnan(e.ts)) return;
  const std::optional<int64_t> at = to_ns(e.ts);
  const std::optional<int64_t> length = std::isnan(e.dur) ? std::optional<int64_t>(0) : to_ns(e.dur);
  if (!at || !length) {
    ++out_of_range_;
    return;
  }
  const int64_t ts = *at;
  if (e.name == "Display::FrameDisplayed" || e.name == "DrawFrame") frame_marks_[e.name].push_back(ts);

  int64_t end = kUnknown;
  if (e.ph == "X") {
    end = ts + std::max<int64_t>(0, *length);
  } else if (e.ph == "B") {
    open_[{e.pid, e.tid}].emplace_back(ts, trace_.label_id(e.name));
    return;
  } else if (e.ph == "E") {
    auto& stack = open_[{e.pid, e.tid}];
    if (stack.empty()) return;
    auto [start, label] = stack.back();
    stack.pop_back();
    slices_.push_back({start, std::max(start, ts), e.pid, e.tid, label, false, kUnknown});
    return;
  } else {
    return;
  }
  if (is_launch_category(e.cat) && e.correlation != kUnknown) launches_.emplace(e.correlation, ts);
  if (e.name.starts_with("ProfilerStep#")) frame_marks_["ProfilerStep#"].push_back(ts);
  const bool device = is_device_category(e.cat);
  // Once device events appear, only they count as GPU work: the rest need not be kept.
  if (device && !seen_device_) {
    seen_device_ = true;
    std::erase_if(slices_, [](const slice& s) { return !s.device; });
  }
  if (seen_device_ && !device) return;
  slices_.push_back({ts, end, e.pid, e.tid, trace_.label_id(e.name), device, e.correlation});
}

trace_model chrome_handler::build() {
  trace_.format = trace_format::chrome_json;
  auto name_of = [&](int64_t id, const std::map<int64_t, std::string>& names) {
    auto it = names.find(id);
    if (it != names.end()) return it->second;
    auto s = string_names_.find(id);
    return s != string_names_.end() ? s->second : std::to_string(id);
  };
  bool any_device = false;
  for (const slice& s : slices_) any_device = any_device || s.device;
  std::vector<int64_t> gpu_pids;
  for (const auto& [pid, name] : process_names_) {
    if (name == "GPU Process") gpu_pids.push_back(pid);
  }
  auto in_gpu_process = [&](int64_t pid) { return std::find(gpu_pids.begin(), gpu_pids.end(), pid) != gpu_pids.end(); };

  trace_.source = any_device ? gpu_source::device : gpu_pids.empty() ? gpu_source::none : gpu_source::gpu_process;
  for (const slice& s : slices_) {
    if (any_device ? !s.device : !in_gpu_process(s.pid)) continue;
    gpu_interval i;
    i.start_ns = s.start_ns;
    i.end_ns = s.end_ns;
    auto thread = thread_names_.find({s.pid, s.tid});
    std::string track = thread != thread_names_.end() ? thread->second : "thread " + name_of(s.tid, {});
    if (any_device)
      track = name_of(s.pid, process_names_) + " / " +
              (thread != thread_names_.end() ? thread->second : "stream " + name_of(s.tid, {}));
    i.track = trace_.track_id(track);
    i.label = s.label;
    // Device events carry the device as pid; one profile covers every device of the run.
    i.pid = any_device ? kUnknown : s.pid;
    if (s.correlation != kUnknown) {
      auto launch = launches_.find(s.correlation);
      if (launch != launches_.end()) i.cpu_to_gpu_ns = s.start_ns - launch->second;
    }
    trace_.intervals.push_back(i);
  }
  for (const auto& [pid, name] : process_names_) trace_.process_names[pid] = name;

  static constexpr std::pair<const char*, const char*> kFrameSources[] = {
      {"Display::FrameDisplayed", "Display::FrameDisplayed events (frames Chromium put on screen)"},
      {"DrawFrame", "DrawFrame events (DevTools timeline)"},
      {"ProfilerStep#", "ProfilerStep#N slices (one per profiler step)"},
  };
  for (const auto& [key, description] : kFrameSources) {
    auto it = frame_marks_.find(key);
    if (it == frame_marks_.end() || it->second.size() < 2) continue;
    for (int64_t t : it->second) trace_.presents.push_back({t, kUnknown});
    trace_.present_source = description;
    trace_.presents_are_steps = std::string_view(key) == "ProfilerStep#";
    break;
  }
  if (out_of_range_ > 0) {
    trace_.notes.push_back("Skipped " + std::to_string(out_of_range_) +
                           " events whose ts or dur is not a usable time (beyond 146 years or not a number).");
  }
  if (trace_.source == gpu_source::gpu_process) {
    trace_.notes.push_back(
        "Chromium recorded no GPU device timestamps, so busy time is the GPU process's own work "
        "(its threads' slices, merged).");
  }
  return std::move(trace_);
}

}  // namespace

absl::StatusOr<trace_model> read_chrome_json(std::FILE* in, const std::string& name, const read_control& control) {
  // The size tells a file that ends early from one that is damaged in the middle.
  const uint64_t size = stream_size(in);
  std::vector<char> buffer(1 << 16);
  rapidjson::FileReadStream stream(in, buffer.data(), buffer.size());
  rapidjson::Reader reader;
  chrome_handler handler(control, stream, size);
  const rapidjson::ParseResult ok = reader.Parse<rapidjson::kParseNanAndInfFlag>(stream, handler);
  if (handler.was_cancelled()) return absl::CancelledError(name + ": reading was cancelled");
  if (!ok) {
    const bool at_end = ok.Offset() >= size;
    // The bare-array form may end without its ']' once the last event is complete.
    const bool tolerated =
        at_end && handler.array_form() && handler.depth() == 1 && !handler.inside_event() && handler.event_count() > 0;
    if (!tolerated) {
      return absl::InvalidArgumentError(
          name + (at_end ? ": the trace JSON ends early (truncated) at byte " : ": malformed trace JSON at byte ") +
          std::to_string(ok.Offset()) + " of " + std::to_string(size) + ": " + rapidjson::GetParseError_En(ok.Code()));
    }
  }
  if (!handler.events_seen()) {
    return absl::InvalidArgumentError(name +
                                      ": not a Chrome trace: no \"traceEvents\" array and not an array of events");
  }
  trace_model trace = handler.build();
  if (trace.intervals.empty() && trace.presents.empty()) {
    return absl::InvalidArgumentError(
        name + ": the trace has " + std::to_string(handler.event_count()) +
        " events but no GPU work (no kernel/gpu_memcpy/gpu_memset events, no \"GPU Process\") and no frame markers");
  }
  return trace;
}

absl::StatusOr<trace_model> read_chrome_json(const std::filesystem::path& file, const read_control& control) {
  std::unique_ptr<std::FILE, decltype(&std::fclose)> in(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!in) return absl::NotFoundError("cannot open " + file.string());
  return read_chrome_json(in.get(), file.string(), control);
}

}  // namespace toolhost::gpu_profile
