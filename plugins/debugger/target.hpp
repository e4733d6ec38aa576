// The debugger's view of one debug-target session (debug_target.h), in C++ terms: statuses
// instead of codes, a parsed register map, typed thread and module lists.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/debug_target.h>

namespace toolhost::debugger {

struct register_desc {
  std::string name;
  uint32_t bits = 0;
  uint32_t offset = 0;
  std::string role;
  uint32_t index = 0;  // position in the backend's map (write_register)
};

struct thread_info {
  int64_t id = 0;
  std::string name;
  bool current = false;
};

struct module_info {
  std::string name, path;
  uint64_t base = 0, size = 0;
};

using register_values = std::map<std::string, uint64_t, std::less<>>;

class target {
 public:
  // Takes ownership of `raw` (closed in the destructor).
  explicit target(toolhost_debug_target_t* raw, std::string backend);
  ~target();
  target(const target&) = delete;
  target& operator=(const target&) = delete;

  const std::string& backend() const { return backend_; }
  bool has(uint64_t cap) const {
    uint64_t caps = caps_;
    // With a translation, virtual memory is what physical memory offers.
    if (to_physical_) {
      if (caps_ & TOOLHOST_DT_CAP_READ_PHYSICAL) caps |= TOOLHOST_DT_CAP_READ_VIRTUAL;
      if (caps_ & TOOLHOST_DT_CAP_WRITE_PHYSICAL) caps |= TOOLHOST_DT_CAP_WRITE_VIRTUAL;
    }
    return (caps & cap) != 0;
  }
  const std::string& arch() const { return arch_; }
  const std::string& kind() const { return kind_; }  // "process", "system", "dump"
  const std::string& os() const { return os_; }      // "linux", "windows" or ""
  const std::vector<register_desc>& registers() const { return registers_; }
  const register_desc* find_register(std::string_view name) const;
  const register_desc* register_with_role(std::string_view role) const;
  // A hint from describe() ("executable", "pid", "kernel_base", ...), "" when absent.
  std::string hint(std::string_view name) const;

  // Reads up to `size` bytes; the prefix that could be read (never empty on success).
  absl::StatusOr<std::string> read(uint64_t address, size_t size, toolhost_dt_space_t space = TOOLHOST_DT_VIRTUAL);
  absl::Status write(uint64_t address, std::string_view data, toolhost_dt_space_t space = TOOLHOST_DT_VIRTUAL);
  absl::StatusOr<register_values> read_registers(int64_t thread = -1);
  absl::Status write_register(const register_desc& reg, uint64_t value, int64_t thread = -1);
  absl::Status set_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length);
  absl::Status clear_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length);
  // `signal` (the target OS's number, 0: none) is delivered to the thread that stopped.
  absl::Status resume(toolhost_dt_resume_t how, int64_t thread = -1, int signal = 0);
  // Whether the backend can resume with a signal at all (debug_target.h resume_with_signal).
  bool can_deliver_signals() const;
  // The signals the backend hands to the program without stopping (pass_signals);
  // Unimplemented when the backend has no such filter.
  absl::Status pass_signals(const std::vector<int32_t>& signals);
  // The raw siginfo of the last signal stop (read_siginfo).
  absl::StatusOr<std::string> siginfo();
  absl::Status interrupt();
  // A stop, nullopt while still running after `timeout`.
  absl::StatusOr<std::optional<toolhost_dt_stop_t>> wait_stop(std::chrono::milliseconds timeout);
  bool is_running();
  std::vector<thread_info> threads();
  absl::Status select_thread(int64_t id);
  std::vector<module_info> modules();
  std::string read_output();
  // Virtual addresses through `to_physical` when set (the Windows model's page walk: a .process
  // scope, or a VM's kernel the backend cannot reach itself): reads and writes then go page by
  // page to physical memory. Unset: the backend's own virtual reads.
  using translation = std::function<absl::StatusOr<uint64_t>(uint64_t va)>;
  void set_translation(translation t) { to_physical_ = std::move(t); }
  bool translating() const { return static_cast<bool>(to_physical_); }

  // The backend's own session, for code that drives it whole (.dump /f). Owned by this object.
  toolhost_debug_target_t* raw() const { return raw_; }

  // A backend-specific operation (debug_target.h `extension`): its JSON result.
  absl::StatusOr<std::string> extension(std::string_view operation, std::string_view args_json);

 private:
  absl::Status check(toolhost_status_t code, const std::string& error, std::string_view what) const;
  void describe();

  toolhost_debug_target_t* raw_;
  std::string backend_;
  uint64_t caps_ = 0;
  std::string arch_, kind_, os_;
  std::vector<register_desc> registers_;
  std::map<std::string, std::string, std::less<>> hints_;
  size_t register_bytes_ = 0;
  translation to_physical_;
};

}  // namespace toolhost::debugger
