// Reads `xctrace export` XML of a Metal System Trace, streaming it through expat.
//
// Shape: <trace-query-result><node xpath=..><schema name=..><col><mnemonic>start</mnemonic>..
// </col>..</schema><row><start-time fmt="..">123</start-time>..</row>..</node>..</trace-query-result>
// Each row has one element per column, in schema order. A value seen before is written as
// <tag ref="N"/> pointing at the earlier <tag id="N">; ids are global to the document and an
// interned element may have children (a process carries its <pid>), so the whole value is kept.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unordered_map>

#include <expat.h>

#include "trace_reader.hpp"

namespace toolhost::gpu_profile {
namespace {

// One column value: its text, its display string and the text of its direct children.
struct xml_value {
  std::string text;
  std::string fmt;
  std::vector<std::pair<std::string, std::string>> children;
  bool sentinel = false;  // <sentinel/>: the column is empty in this row

  const std::string& shown() const { return text.empty() ? fmt : text; }
  const std::string* child(std::string_view tag) const {
    for (const auto& [t, v] : children) {
      if (t == tag) return &v;
    }
    return nullptr;
  }
};

enum class table_kind { other, gpu_intervals, gpu_state, displayed_surfaces, vsyncs, submissions };

table_kind kind_of(std::string_view schema) {
  if (schema == "metal-gpu-intervals") return table_kind::gpu_intervals;
  if (schema == "metal-gpu-state-intervals") return table_kind::gpu_state;
  if (schema == "displayed-surfaces-interval") return table_kind::displayed_surfaces;
  if (schema == "display-vsyncs-interval") return table_kind::vsyncs;
  if (schema == "metal-application-command-buffer-submissions") return table_kind::submissions;
  return table_kind::other;
}

// Beyond +-2^62 ns (146 years) a value is not a time; below it start + duration fits int64.
constexpr int64_t kMaxTime = int64_t{1} << 62;
bool in_time_range(int64_t v) { return v > -kMaxTime && v < kMaxTime; }

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

class xctrace_parser {
 public:
  explicit xctrace_parser(std::string file) : file_(std::move(file)) { trace_.format = trace_format::xctrace_xml; }

  absl::StatusOr<trace_model> run(std::FILE* in, const read_control& control) {
    const uint64_t total = stream_size(in);
    uint64_t done = 0;
    std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate(nullptr), &XML_ParserFree);
    if (!parser) return absl::ResourceExhaustedError("could not create an XML parser");
    parser_ = parser.get();
    XML_SetUserData(parser_, this);
    XML_SetElementHandler(parser_, &xctrace_parser::on_start, &xctrace_parser::on_end);
    XML_SetCharacterDataHandler(parser_, &xctrace_parser::on_text);

    std::vector<char> buffer(1 << 16);
    for (;;) {
      if (control.cancelled && control.cancelled()) return absl::CancelledError(file_ + ": reading was cancelled");
      const size_t n = std::fread(buffer.data(), 1, buffer.size(), in);
      const bool last = n < buffer.size();
      done += n;
      if (control.progress && (done & ((1u << 22) - 1)) < n) control.progress(done, total);  // every 4 MiB
      if (std::ferror(in)) return absl::DataLossError(file_ + ": read error");
      if (XML_Parse(parser_, buffer.data(), static_cast<int>(n), last) == XML_STATUS_ERROR) {
        if (!error_.empty()) return absl::InvalidArgumentError(error_);
        const XML_Error code = XML_GetErrorCode(parser_);
        const bool truncated = last && (code == XML_ERROR_NO_ELEMENTS || code == XML_ERROR_UNCLOSED_TOKEN ||
                                        code == XML_ERROR_PARTIAL_CHAR || code == XML_ERROR_UNCLOSED_CDATA_SECTION);
        return absl::InvalidArgumentError(
            file_ + (truncated ? ": the xctrace export ends early (truncated)" : ": malformed xctrace XML") +
            " at line " + std::to_string(XML_GetCurrentLineNumber(parser_)) + ", column " +
            std::to_string(XML_GetCurrentColumnNumber(parser_)) + ": " + XML_ErrorString(code));
      }
      if (last) break;
    }
    if (root_ != "trace-query-result") {
      return absl::InvalidArgumentError(file_ + ": not an xctrace table export (the root element is <" + root_ +
                                        ">, expected <trace-query-result>)" +
                                        (root_ == "trace-toc" ? "; this is the table of contents: export the "
                                                                "tables with xctrace export --xpath"
                                                              : ""));
    }
    if (!saw_gpu_table_ && !saw_present_table_) {
      std::string seen;
      for (const auto& s : schemas_) seen += (seen.empty() ? "" : ", ") + s;
      return absl::InvalidArgumentError(
          file_ + ": the export has no metal-gpu-intervals or displayed-surfaces-interval table (tables found: " +
          (seen.empty() ? "none" : seen) + ")");
    }
    trace_.source = saw_gpu_table_ ? gpu_source::device : gpu_source::none;
    join_commits();
    if (!trace_.presents.empty()) trace_.present_source = "displayed-surfaces-interval (swap times)";
    return std::move(trace_);
  }

 private:
  struct frame {
    std::string tag;
    xml_value value;
    std::string id;  // this element's id, to intern when it closes
    bool is_ref = false;
  };

  static void on_start(void* ud, const XML_Char* name, const XML_Char** attrs) {
    static_cast<xctrace_parser*>(ud)->start(name, attrs);
  }
  static void on_end(void* ud, const XML_Char* name) { static_cast<xctrace_parser*>(ud)->end(name); }
  static void on_text(void* ud, const XML_Char* s, int len) {
    auto* self = static_cast<xctrace_parser*>(ud);
    if (!self->stack_.empty()) self->stack_.back().value.text.append(s, static_cast<size_t>(len));
  }

  void fail(std::string message) {
    if (error_.empty()) error_ = file_ + ": " + std::move(message);
    XML_StopParser(parser_, XML_FALSE);
  }

  void start(std::string_view name, const XML_Char** attrs) {
    if (stack_.empty() && root_.empty()) root_ = name;
    frame f;
    f.tag = name;
    for (size_t i = 0; attrs[i] != nullptr; i += 2) {
      const std::string_view key = attrs[i];
      if (key == "id") f.id = attrs[i + 1];
      if (key == "fmt") f.value.fmt = attrs[i + 1];
      if (key == "name" && name == "schema") begin_schema(attrs[i + 1]);
      if (key == "ref") {
        auto it = interned_.find(attrs[i + 1]);
        if (it == interned_.end()) {
          fail(std::string("ref=\"") + attrs[i + 1] + "\" at line " +
               std::to_string(XML_GetCurrentLineNumber(parser_)) + " points at no earlier id");
          return;
        }
        f.value = it->second;
        f.is_ref = true;
      }
    }
    if (name == "sentinel") f.value.sentinel = true;
    stack_.push_back(std::move(f));
    if (name == "row") {
      row_.clear();
      row_depth_ = stack_.size();
    }
  }

  void end(std::string_view name) {
    if (stack_.empty()) return;
    frame f = std::move(stack_.back());
    stack_.pop_back();
    if (!f.is_ref) trim(f.value.text);
    if (!f.id.empty()) interned_[f.id] = f.value;

    if (name == "mnemonic" && in("col")) columns_.push_back(f.value.text);
    if (stack_.empty()) return;
    frame& parent = stack_.back();
    if (name == "row") {
      row_depth_ = 0;
      end_row();
    } else if (row_depth_ != 0 && stack_.size() == row_depth_) {
      row_.push_back(std::move(f.value));
    } else if (row_depth_ != 0 && stack_.size() > row_depth_) {
      // A value's own children (a process's pid); only direct children are kept.
      parent.value.children.emplace_back(f.tag, f.value.shown());
    }
  }

  bool in(std::string_view tag) const { return !stack_.empty() && stack_.back().tag == tag; }

  static void trim(std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) {
      s.clear();
      return;
    }
    s = s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
  }

  void begin_schema(std::string_view schema) {
    schemas_.emplace_back(schema);
    kind_ = kind_of(schema);
    columns_.clear();
    if (kind_ == table_kind::gpu_intervals) saw_gpu_table_ = true;
    if (kind_ == table_kind::displayed_surfaces) saw_present_table_ = true;
  }

  const xml_value* column(std::string_view mnemonic) const {
    for (size_t i = 0; i < columns_.size() && i < row_.size(); ++i) {
      if (columns_[i] == mnemonic && !row_[i].sentinel) return &row_[i];
    }
    return nullptr;
  }

  bool number(std::string_view mnemonic, int64_t& out) const {
    const xml_value* v = column(mnemonic);
    return v != nullptr && parse_int(v->text, out);
  }

  int64_t pid_of_row() {
    const xml_value* p = column("process");
    if (p == nullptr) return kUnknown;
    int64_t pid = kUnknown;
    const std::string* text = p->child("pid");
    if (text == nullptr || !parse_int(*text, pid)) return kUnknown;
    if (!p->fmt.empty() && !trace_.process_names.contains(pid)) {
      // fmt is "Name (pid)"; keep the name.
      std::string name = p->fmt;
      if (auto paren = name.rfind(" ("); paren != std::string::npos) name.resize(paren);
      trace_.process_names[pid] = name;
    }
    return pid;
  }

  void end_row() {
    if (row_.size() > columns_.size()) {
      fail("a row of table " + (schemas_.empty() ? std::string("?") : schemas_.back()) + " at line " +
           std::to_string(XML_GetCurrentLineNumber(parser_)) + " has " + std::to_string(row_.size()) + " values for " +
           std::to_string(columns_.size()) + " columns");
      return;
    }
    int64_t start = 0, duration = 0;
    switch (kind_) {
      case table_kind::gpu_intervals: {
        if (!number("start", start) || !number("duration", duration) || duration < 0) {
          fail("a metal-gpu-intervals row at line " + std::to_string(XML_GetCurrentLineNumber(parser_)) +
               " has no numeric start and duration");
          return;
        }
        if (!in_time_range(start) || !in_time_range(duration)) {
          fail("a metal-gpu-intervals row at line " + std::to_string(XML_GetCurrentLineNumber(parser_)) +
               " has a start or duration out of range (" + std::to_string(start) + ", " + std::to_string(duration) +
               ")");
          return;
        }
        gpu_interval i;
        i.start_ns = start;
        i.end_ns = start + duration;
        const xml_value* channel = column("channel-name");
        const xml_value* gpu = column("gpu");
        std::string track = channel != nullptr ? channel->shown() : "GPU";
        if (gpu != nullptr && !gpu->shown().empty()) track = gpu->shown() + " / " + track;
        i.track = trace_.track_id(track);
        const xml_value* label = column("event-label");
        i.label = trace_.label_id(label != nullptr && !label->shown().empty() ? label->shown() : track);
        i.pid = pid_of_row();
        number("frame-number", i.frame);
        int64_t latency = 0;
        if (number("start-latency", latency) && in_time_range(latency)) i.cpu_to_gpu_ns = latency;
        number("cmdbuffer-id", i.command_buffer);
        trace_.intervals.push_back(i);
        break;
      }
      case table_kind::gpu_state: {
        const xml_value* state = column("state");
        if (state != nullptr && state->shown() == "Active" && number("duration", duration) && in_time_range(duration) &&
            trace_.machine_active_ns.value_or(0) < kMaxTime) {
          trace_.machine_active_ns = trace_.machine_active_ns.value_or(0) + duration;
        }
        break;
      }
      case table_kind::displayed_surfaces:
        if (number("start", start) && in_time_range(start)) trace_.presents.push_back({start, pid_of_row()});
        break;
      case table_kind::vsyncs:
        if ((number("timestamp", start) || number("start", start)) && in_time_range(start))
          trace_.vsyncs_ns.push_back(start);
        break;
      case table_kind::submissions: {
        int64_t id = kUnknown;
        if (number("start", start) && in_time_range(start) && number("cmdbuffer-id", id)) commits_.emplace(id, start);
        break;
      }
      case table_kind::other: break;
    }
  }

  // Rows without start-latency: from their command buffer's commit to the GPU starting it.
  void join_commits() {
    if (commits_.empty()) return;
    int64_t joined = 0;
    for (gpu_interval& i : trace_.intervals) {
      if (i.cpu_to_gpu_ns != kUnknown || i.command_buffer == kUnknown) continue;
      auto it = commits_.find(i.command_buffer);
      if (it == commits_.end()) continue;
      i.cpu_to_gpu_ns = i.start_ns - it->second;
      ++joined;
    }
    if (joined > 0) {
      trace_.notes.push_back("CPU to GPU latency of " + std::to_string(joined) +
                             " GPU rows without start-latency is from their command buffer's commit "
                             "(metal-application-command-buffer-submissions) to the GPU start.");
    }
  }

  std::string file_;
  XML_Parser parser_ = nullptr;
  std::unordered_map<int64_t, int64_t> commits_;  // cmdbuffer-id -> commit start
  std::string error_;
  std::string root_;
  std::vector<frame> stack_;
  std::unordered_map<std::string, xml_value> interned_;
  std::vector<std::string> schemas_;
  std::vector<std::string> columns_;
  std::vector<xml_value> row_;
  size_t row_depth_ = 0;  // stack depth of the open <row>, 0 outside rows
  table_kind kind_ = table_kind::other;
  bool saw_gpu_table_ = false;
  bool saw_present_table_ = false;
  trace_model trace_;
};

}  // namespace

absl::StatusOr<trace_model> read_xctrace_xml(std::FILE* in, const std::string& name, const read_control& control) {
  return xctrace_parser(name).run(in, control);
}

absl::StatusOr<trace_model> read_xctrace_xml(const std::filesystem::path& file, const read_control& control) {
  std::unique_ptr<std::FILE, decltype(&std::fclose)> in(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!in) return absl::NotFoundError("cannot open " + file.string());
  return read_xctrace_xml(in.get(), file.string(), control);
}

}  // namespace toolhost::gpu_profile
