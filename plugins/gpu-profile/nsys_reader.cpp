// Reads an Nsight Systems SQLite export (`nsys export --type sqlite`).
//
// GPU work: CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY and _MEMSET rows ([start, end) in ns on a
// device and stream). CPU-to-GPU latency: the CUDA API call in CUPTI_ACTIVITY_KIND_RUNTIME with
// the same correlationId, from its start to the GPU start. Frames: NVTX push/pop or start/end
// ranges (eventType 59, 60) whose text names a frame. Tables are created lazily by nsys, so any
// of them may be missing.
#include <memory>
#include <set>
#include <unordered_map>

#include <sqlite3.h>

#include "trace_reader.hpp"

namespace toolhost::gpu_profile {
namespace {

using db_ptr = std::unique_ptr<sqlite3, decltype(&sqlite3_close)>;
using stmt_ptr = std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)>;

constexpr int kNvtxPushPopRange = 59;
constexpr int kNvtxStartEndRange = 60;

class nsys_db {
 public:
  nsys_db(sqlite3* db, std::string file) : db_(db), file_(std::move(file)) {}

  absl::Status error(std::string_view what) const {
    const int code = sqlite3_errcode(db_);
    std::string message = file_ + ": " + std::string(what) + ": " + sqlite3_errmsg(db_);
    if (code == SQLITE_NOTADB) message = file_ + ": not an SQLite database (" + sqlite3_errmsg(db_) + ")";
    if (code == SQLITE_INTERRUPT) return absl::CancelledError(file_ + ": reading was cancelled");
    if (code == SQLITE_CORRUPT)
      message = file_ + ": the SQLite export is damaged or truncated (" + sqlite3_errmsg(db_) + ")";
    return absl::InvalidArgumentError(message);
  }

  absl::StatusOr<stmt_ptr> prepare(const std::string& sql) const {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) return error("cannot query");
    return stmt_ptr(raw, &sqlite3_finalize);
  }

  // Runs `sql`, calling `row` for each result row.
  template <class F>
  absl::Status each(const std::string& sql, F&& row) const {
    auto stmt = prepare(sql);
    if (!stmt.ok()) return stmt.status();
    for (;;) {
      const int rc = sqlite3_step(stmt->get());
      if (rc == SQLITE_DONE) return absl::OkStatus();
      if (rc != SQLITE_ROW) return error("cannot read");
      row(stmt->get());
    }
  }

  absl::StatusOr<std::set<std::string>> tables() const {
    std::set<std::string> names;
    absl::Status s = each("SELECT name FROM sqlite_master WHERE type = 'table'", [&](sqlite3_stmt* st) {
      names.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    });
    if (!s.ok()) return s;
    return names;
  }

 private:
  sqlite3* db_;
  std::string file_;
};

std::string text_of(sqlite3_stmt* st, int column) {
  const unsigned char* t = sqlite3_column_text(st, column);
  return t != nullptr ? reinterpret_cast<const char*>(t) : "";
}

// SQLite calls this every few thousand steps; non-zero interrupts the query.
int on_progress(void* user) {
  const auto* control = static_cast<const read_control*>(user);
  return control->cancelled && control->cancelled() ? 1 : 0;
}

}  // namespace

absl::StatusOr<trace_model> read_nsys_sqlite(const std::filesystem::path& file, const read_control& control) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  db_ptr holder(raw, &sqlite3_close);
  if (rc != SQLITE_OK) {
    return absl::InvalidArgumentError(file.string() + ": cannot open (" +
                                      (raw != nullptr ? sqlite3_errmsg(raw) : "out of memory") + ")");
  }
  nsys_db db(raw, file.string());
  sqlite3_progress_handler(raw, 10000, &on_progress, const_cast<read_control*>(&control));
  auto stopped = [&] { return control.cancelled && control.cancelled(); };
  const absl::Status cancelled = absl::CancelledError(file.string() + ": reading was cancelled");
  if (stopped()) return cancelled;
  auto tables = db.tables();
  if (!tables.ok()) return tables.status();

  trace_model trace;
  trace.format = trace_format::nsys_sqlite;
  const bool strings = tables->contains("StringIds");

  std::unordered_map<int64_t, int64_t> launches;  // correlationId -> API call start
  if (tables->contains("CUPTI_ACTIVITY_KIND_RUNTIME")) {
    absl::Status s = db.each("SELECT correlationId, start FROM CUPTI_ACTIVITY_KIND_RUNTIME", [&](sqlite3_stmt* st) {
      launches.emplace(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    });
    if (!s.ok()) return s;
  }

  struct gpu_table {
    const char* table;
    const char* name_sql;  // the label of a row
    const char* fallback;  // the label when the row has no name
  };
  const std::string kernel_name =
      strings ? "COALESCE((SELECT value FROM StringIds WHERE id = t.shortName), 'kernel')" : "'kernel'";
  const gpu_table kTables[] = {
      {"CUPTI_ACTIVITY_KIND_KERNEL", kernel_name.c_str(), "kernel"},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", "'memcpy'", "memcpy"},
      {"CUPTI_ACTIVITY_KIND_MEMSET", "'memset'", "memset"},
  };
  bool any_gpu_table = false;
  for (const gpu_table& g : kTables) {
    if (!tables->contains(g.table)) continue;
    if (stopped()) return cancelled;
    any_gpu_table = true;
    const std::string sql =
        std::string("SELECT t.start, t.\"end\", t.deviceId, t.streamId, t.correlationId, t.globalPid, ") + g.name_sql +
        " FROM " + g.table + " AS t";
    absl::Status bad = absl::OkStatus();
    absl::Status s = db.each(sql, [&](sqlite3_stmt* st) {
      gpu_interval i;
      i.start_ns = sqlite3_column_int64(st, 0);
      i.end_ns = sqlite3_column_int64(st, 1);
      constexpr int64_t kMaxTime = int64_t{1} << 62;  // beyond 146 years a value is not a time
      if ((i.start_ns <= -kMaxTime || i.start_ns >= kMaxTime || i.end_ns <= -kMaxTime || i.end_ns >= kMaxTime) &&
          bad.ok()) {
        bad = absl::InvalidArgumentError(file.string() + ": a row of " + g.table + " has a time out of range (start " +
                                         std::to_string(i.start_ns) + ", end " + std::to_string(i.end_ns) + ")");
      }
      if (i.end_ns < i.start_ns && bad.ok()) {
        bad = absl::InvalidArgumentError(file.string() + ": a row of " + g.table + " ends before it starts (start " +
                                         std::to_string(i.start_ns) + ", end " + std::to_string(i.end_ns) + ")");
      }
      i.track = trace.track_id("GPU " + std::to_string(sqlite3_column_int64(st, 2)) + " / stream " +
                               std::to_string(sqlite3_column_int64(st, 3)));
      // globalPid packs the process id above bit 24.
      i.pid = (sqlite3_column_int64(st, 5) >> 24) & 0xFFFFFF;
      const std::string name = text_of(st, 6);
      i.label = trace.label_id(name.empty() ? std::string(g.fallback) : name);
      auto launch = launches.find(sqlite3_column_int64(st, 4));
      if (launch != launches.end() && !__builtin_sub_overflow(i.start_ns, launch->second, &i.cpu_to_gpu_ns)) {
      } else {
        i.cpu_to_gpu_ns = kUnknown;
      }
      trace.intervals.push_back(i);
    });
    if (!s.ok()) return s;
    if (!bad.ok()) return bad;
  }

  if (stopped()) return cancelled;
  if (tables->contains("NVTX_EVENTS")) {
    const std::string text =
        strings ? "COALESCE(n.text, (SELECT value FROM StringIds WHERE id = n.textId), '')" : "COALESCE(n.text, '')";
    absl::Status s = db.each(
        "SELECT n.start, " + text + ", n.globalTid FROM NVTX_EVENTS AS n WHERE n.eventType IN (" +
            std::to_string(kNvtxPushPopRange) + ", " + std::to_string(kNvtxStartEndRange) + ")",
        [&](sqlite3_stmt* st) {
          if (!is_frame_range_name(text_of(st, 1))) return;
          trace.presents.push_back({sqlite3_column_int64(st, 0), (sqlite3_column_int64(st, 2) >> 24) & 0xFFFFFF});
        });
    if (!s.ok()) return s;
    if (!trace.presents.empty()) trace.present_source = "NVTX ranges named like a frame (their starts)";
  }

  if (!any_gpu_table && trace.presents.empty()) {
    return absl::InvalidArgumentError(
        file.string() +
        ": no CUDA activity (CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET) and no NVTX frame ranges; "
        "is this an `nsys export --type sqlite` of a run traced with --trace=cuda,nvtx?");
  }
  trace.source = trace.intervals.empty() ? gpu_source::none : gpu_source::device;
  if (tables->contains("PROCESSES")) {
    (void)db.each("SELECT pid, name FROM PROCESSES",
                  [&](sqlite3_stmt* st) { trace.process_names[sqlite3_column_int64(st, 0)] = text_of(st, 1); });
  }
  return trace;
}

}  // namespace toolhost::gpu_profile
