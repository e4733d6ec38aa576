#include "target_adapter.hpp"

#include <memory>
#include <string>
#include <vector>

#include <toolhost/sdk/debug_target.hpp>

#include "gdb_session.hpp"

namespace toolhost::gdb {
namespace {

// The SDK's debug_target over a gdb::session: the session already speaks absl::Status, so each
// function forwards.
class gdb_target final : public sdk::debug_target {
 public:
  explicit gdb_target(std::unique_ptr<session> s) : debug_target("gdb"), s_(std::move(s)) {}
  ~gdb_target() override {
    try {
      s_->shutdown();
    } catch (...) {
    }
  }

  uint32_t optional_functions() const override {
    return sdk::dt_resume_with_signal | sdk::dt_pass_signals | sdk::dt_read_siginfo;
  }
  uint64_t capabilities() override { return s_->capabilities(); }
  std::string describe() override { return s_->describe_json(); }
  absl::StatusOr<size_t> read_memory(toolhost_dt_space_t space, uint64_t address, absl::Span<uint8_t> out) override {
    return s_->read_memory(space, address, out.data(), out.size());
  }
  absl::Status write_memory(toolhost_dt_space_t space, uint64_t address, absl::Span<const uint8_t> data) override {
    return s_->write_memory(space, address, data.data(), data.size());
  }
  absl::StatusOr<std::vector<uint8_t>> read_registers(int64_t thread) override { return s_->read_registers(thread); }
  absl::Status write_register(int64_t thread, uint32_t index, absl::Span<const uint8_t> value) override {
    return s_->write_register(thread, index, value.data(), value.size());
  }
  absl::Status set_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) override {
    return s_->set_breakpoint(type, address, length);
  }
  absl::Status clear_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) override {
    return s_->clear_breakpoint(type, address, length);
  }
  absl::Status resume(toolhost_dt_resume_t how, int64_t thread) override { return s_->resume(how, thread); }
  absl::Status resume_with_signal(toolhost_dt_resume_t how, int64_t thread, int32_t signal) override {
    return s_->resume(how, thread, signal);
  }
  absl::Status pass_signals(const std::vector<int32_t>& signals) override {
    return s_->pass_signals(std::vector<int>(signals.begin(), signals.end()));
  }
  absl::StatusOr<std::string> siginfo() override { return s_->siginfo(); }
  absl::Status interrupt() override { return s_->interrupt(); }
  absl::StatusOr<toolhost_dt_stop_t> wait_stop(std::chrono::milliseconds timeout) override {
    toolhost_dt_stop_t stop{};
    if (absl::Status s = s_->wait_stop(timeout, stop); !s.ok()) return s;
    return stop;
  }
  bool is_running() override { return s_->is_running(); }
  std::vector<sdk::dt_thread> threads() override {
    std::vector<sdk::dt_thread> out;
    auto list = s_->threads();
    if (!list.ok()) return out;
    for (const thread_entry& t : *list) out.push_back({t.id, t.name, t.id == s_->current_thread()});
    return out;
  }
  absl::Status select_thread(int64_t thread) override { return s_->select_thread(thread); }
  std::vector<sdk::dt_module> modules() override {
    std::vector<sdk::dt_module> out;
    auto list = s_->modules();
    if (!list.ok()) return out;
    for (const module_entry& m : *list) out.push_back({m.name, m.path, m.base, m.size});
    return out;
  }
  std::vector<std::string> take_output() override { return {s_->take_output()}; }

 private:
  std::unique_ptr<session> s_;
};

absl::StatusOr<std::unique_ptr<sdk::debug_target>> open(const sdk::open_request& request) {
  auto s =
      session::open(request.connect, request.timeout.count() == 0 ? std::chrono::milliseconds(10000) : request.timeout);
  if (!s.ok()) {
    std::string text(s.status().message());
    if (absl::IsUnavailable(s.status()) && text.starts_with("cannot connect")) {
      text += ". Start a stub first, e.g. `gdbserver 127.0.0.1:1234 ./program` or `qemu-system-x86_64 -s -S ...`";
    }
    return absl::Status(s.status().code(), text + ".");
  }
  return std::make_unique<gdb_target>(std::move(*s));
}

constexpr toolhost_debug_target_factory_t kFactory = sdk::debug_target_factory<&open>({
    "gdb",
    "GDB remote protocol over TCP: gdbserver (a Linux process) or QEMU's gdbstub (-s -S, a whole machine)",
    "127.0.0.1:1234",
    "host:port of the GDB stub (gdbserver HOST:PORT, or QEMU -s, which listens on 127.0.0.1:1234), or the path of a "
    "Unix socket (QEMU -gdb unix:PATH,server=on)",
});

}  // namespace

const toolhost_debug_target_factory_t* factory() { return &kFactory; }

}  // namespace toolhost::gdb
