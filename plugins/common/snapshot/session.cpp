#include "toolhost/snapshot/session.hpp"

#include <cstring>
#include <string>

#include <absl/strings/str_format.h>

namespace toolhost::snapshots {
namespace {

class snapshot_session final : public sdk::debug_target {
 public:
  explicit snapshot_session(std::unique_ptr<snapshot> snap)
      : debug_target(snap->is_live() ? "memory" : "dump"), snap_(std::move(snap)) {}

  snapshot& snap() { return *snap_; }

  uint32_t optional_functions() const override { return sdk::dt_read_siginfo; }

  uint64_t capabilities() override {
    const snapshot& s = *snap_;
    uint64_t caps = TOOLHOST_DT_CAP_REGISTERS;
    if (s.has_virtual()) caps |= TOOLHOST_DT_CAP_READ_VIRTUAL;
    if (s.has_physical()) caps |= TOOLHOST_DT_CAP_READ_PHYSICAL;
    if (s.is_live() && s.has_physical()) caps |= TOOLHOST_DT_CAP_WRITE_PHYSICAL;
    if (s.threads.size() > 1) caps |= TOOLHOST_DT_CAP_THREADS;
    if (!s.modules.empty()) caps |= TOOLHOST_DT_CAP_MODULES;
    if (s.registers.empty()) caps &= ~TOOLHOST_DT_CAP_REGISTERS;
    return caps;
  }

  std::string describe() override {
    const snapshot& s = *snap_;
    std::string j =
        absl::StrFormat("{\"arch\":\"x86_64\",\"os\":\"%s\",\"kind\":\"%s\",\"registers\":[", s.os(), s.kind());
    for (size_t i = 0; i < s.registers.size(); ++i) {
      const register_def d = x86_register(s.registers[i]);
      j += absl::StrFormat("%s{\"name\":\"%s\",\"bits\":%u,\"offset\":%u,\"role\":\"%s\"}", i ? "," : "", d.name,
                           d.bits, i * 8, d.role);
    }
    return j + "],\"hints\":{" + s.hints_json() + "}}";
  }

  absl::StatusOr<size_t> read_memory(toolhost_dt_space_t space, uint64_t address, absl::Span<uint8_t> out) override {
    if (out.empty()) return 0;
    std::span<uint8_t> into(out.data(), out.size());
    if (space == TOOLHOST_DT_PHYSICAL) {
      if (!snap_->has_physical()) {
        return absl::UnimplementedError(
            "This target has no physical address space (a process core holds virtual memory only).");
      }
      return snap_->read_physical(address, into);
    }
    if (!snap_->has_virtual()) {
      return absl::UnimplementedError(
          "Virtual addresses need a page-table base (CR3): give one when opening the target.");
    }
    const int64_t thread = snap_->threads.empty() ? -1 : snap_->threads[current_].id;
    return snap_->read_virtual(address, into, thread);
  }

  absl::Status write_memory(toolhost_dt_space_t space, uint64_t address, absl::Span<const uint8_t> data) override {
    if (!snap_->is_live()) return absl::UnimplementedError("A dump file is read-only: memory cannot be written.");
    if (space != TOOLHOST_DT_PHYSICAL) return absl::UnimplementedError("This backend writes physical memory only.");
    return snap_->write_physical(address, {data.data(), data.size()});
  }

  absl::StatusOr<std::vector<uint8_t>> read_registers(int64_t thread) override {
    if (snap_->threads.empty() || snap_->registers.empty()) {
      return absl::UnimplementedError("This target has no registers: it is memory only.");
    }
    const size_t index = find_thread(thread);
    if (index == SIZE_MAX) return no_thread(thread);
    const std::vector<uint64_t>& v = snap_->threads[index].values;
    std::vector<uint8_t> out(v.size() * 8);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }

  absl::Status write_register(int64_t, uint32_t, absl::Span<const uint8_t>) override {
    return absl::UnimplementedError(
        snap_->is_live() ? "The memory backend cannot see or change the VM's registers; use the gdb backend."
                         : "A dump file is read-only: registers cannot be changed.");
  }

  absl::Status set_breakpoint(toolhost_dt_breakpoint_type_t, uint64_t, uint32_t) override { return no_run_control(); }
  absl::Status clear_breakpoint(toolhost_dt_breakpoint_type_t, uint64_t, uint32_t) override { return no_run_control(); }
  absl::Status resume(toolhost_dt_resume_t, int64_t) override { return no_run_control(); }
  absl::Status interrupt() override { return no_run_control(); }

  // A dump reports the stop it was taken at, once.
  absl::StatusOr<toolhost_dt_stop_t> wait_stop(std::chrono::milliseconds) override {
    if (stop_reported_ || snap_->is_live()) return no_run_control();
    stop_reported_ = true;
    return snap_->initial_stop();
  }

  absl::StatusOr<std::string> siginfo() override {
    std::string info = snap_->siginfo();
    if (info.empty()) return absl::NotFoundError("this snapshot holds no siginfo");
    return info;
  }

  bool is_running() override { return snap_->is_live(); }

  std::vector<sdk::dt_thread> threads() override {
    std::vector<sdk::dt_thread> out;
    for (size_t i = 0; i < snap_->threads.size(); ++i) {
      out.push_back({snap_->threads[i].id, snap_->threads[i].name, i == current_});
    }
    return out;
  }

  absl::Status select_thread(int64_t thread) override {
    const size_t index = find_thread(thread);
    if (index == SIZE_MAX) return no_thread(thread);
    current_ = index;
    return absl::OkStatus();
  }

  std::vector<sdk::dt_module> modules() override { return snap_->modules; }

  absl::StatusOr<std::string> extension(std::string_view operation, const rapidjson::Value&) override {
    return absl::UnimplementedError(
        absl::StrFormat("The %s backend has no operation \"%s\".", backend(), std::string(operation)));
  }

 private:
  absl::Status no_run_control() const { return absl::UnimplementedError(snap_->why_no_run_control()); }

  size_t find_thread(int64_t id) const {
    if (id == -1) return current_;
    for (size_t i = 0; i < snap_->threads.size(); ++i) {
      if (snap_->threads[i].id == id) return i;
    }
    return SIZE_MAX;
  }

  static absl::Status no_thread(int64_t thread) {
    return absl::NotFoundError(absl::StrFormat("There is no thread %d in this dump.", thread));
  }

  std::unique_ptr<snapshot> snap_;
  size_t current_ = 0;  // index into snap_->threads
  bool stop_reported_ = false;
};

}  // namespace

std::unique_ptr<sdk::debug_target> make_session(std::unique_ptr<snapshot> snap) {
  return std::make_unique<snapshot_session>(std::move(snap));
}

toolhost_debug_target_t* make_target(std::unique_ptr<snapshot> snap) {
  return sdk::to_c(make_session(std::move(snap)));
}

snapshot* snapshot_of(toolhost_debug_target_t* t) {
  auto* s = dynamic_cast<snapshot_session*>(sdk::from_c(t));
  return s != nullptr ? &s->snap() : nullptr;
}

}  // namespace toolhost::snapshots
