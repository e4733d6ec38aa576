// The KD state machine over any `link`: attach, the manipulate APIs, state changes, debug
// output, breakpoint bookkeeping and run control with a background pump. kd-backend runs it
// over KDCOM; kdnet-backend over KDNET.
//
// Threading: one foreground thread at a time calls everything except `interrupt`, `running`
// and `take_output`, which are [any-thread]. While the target runs, the pump thread owns the
// link; manipulate calls fail with FailedPrecondition until a stop is collected.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include "toolhost/kd/link.h"
#include "toolhost/kd/read_cache.h"
#include "toolhost/kd/state_change.h"

namespace toolhost::kd {

struct target_options {
  std::chrono::milliseconds request_timeout{5000};  // wait for a manipulate reply
  std::chrono::milliseconds attach_wait{1000};      // wait for a halted target's state change before breaking in
  std::chrono::milliseconds attach_timeout{10000};  // give up attaching
  int request_retries = 2;                          // resend a request whose reply never came
  int max_overtaking_reports = 8;                   // state changes one request may meet before it gives up
  // After a send during which the target asked for a RESEND, it may have counted our packet as
  // the ACK of a reply we never got (kddll does): a reply not here by then is sent for again.
  std::chrono::milliseconds dropped_reply_wait{600};
  // Physical reads from a per-stop cache (read_cache.h). Off for memory that changes while the
  // processors are halted (device memory a DMA engine writes).
  bool read_cache = true;
};

struct stop_event {
  enum class reason { breakpoint, step, interrupt, exception, bugcheck, reboot, module_load, lost, watchpoint };
  reason why = reason::exception;
  uint16_t processor = 0;
  uint64_t pc = 0;
  uint64_t code = 0;     // NTSTATUS or bugcheck code
  uint64_t address = 0;  // the watched address of a watchpoint hit
  std::vector<uint64_t> bugcheck_parameters;
  std::string description;
};

struct module_event {
  std::string path;
  uint64_t base = 0;
  uint32_t size = 0;
  bool unload = false;
};

class target {
 public:
  // Resets the link, waits for (or breaks in to get) a state change, reads the version and
  // releases breakpoint-table entries a dead session left behind. A state change that arrives
  // meanwhile (a halted target repeats its report while we ask) is the current state; a target
  // that does not answer GetVersion is reset and asked again. Fails with one sentence that says
  // what was seen within the wait (nothing, traffic but no stop, a RESET storm).
  static absl::StatusOr<std::unique_ptr<target>> attach(std::unique_ptr<link> link, target_options options);
  ~target();  // detaches if detach() was not called
  target(const target&) = delete;
  target& operator=(const target&) = delete;

  // ---- Halted-only manipulate APIs ----
  absl::StatusOr<version_info> get_version();
  const version_info& version() const { return version_; }
  // Reads up to buffer.size() bytes; returns how many were read (a prefix).
  absl::StatusOr<size_t> read_virtual(uint64_t address, std::span<uint8_t> buffer);
  absl::StatusOr<size_t> read_physical(uint64_t address, std::span<uint8_t> buffer);
  absl::Status write_virtual(uint64_t address, std::span<const uint8_t> data);
  absl::Status write_physical(uint64_t address, std::span<const uint8_t> data);
  absl::StatusOr<std::vector<uint8_t>> get_context(uint16_t processor);
  absl::Status set_context(uint16_t processor, std::span<const uint8_t> context);  // chunked SetContextEx
  absl::StatusOr<std::vector<uint8_t>> read_control_space(uint16_t processor, uint64_t address, uint32_t size);
  absl::Status write_control_space(uint16_t processor, uint64_t address, std::span<const uint8_t> data);
  absl::StatusOr<uint64_t> read_msr(uint16_t processor, uint32_t msr);
  absl::Status write_msr(uint16_t processor, uint32_t msr, uint64_t value);
  // Makes `processor` current; the target re-reports its state from there.
  absl::Status switch_processor(uint16_t processor);
  // The target reboots; the reboot arrives through wait_stop as reason::reboot.
  absl::Status reboot();
  // The target bugchecks (0xE2, MANUALLY_INITIATED_CRASH); reported through wait_stop.
  absl::Status cause_bugcheck();

  // ---- Breakpoints (software, through the target's breakpoint table) ----
  absl::Status set_breakpoint(uint64_t address);
  absl::Status clear_breakpoint(uint64_t address);
  std::vector<uint64_t> breakpoints() const;

  // ---- Hardware breakpoints and watchpoints (DR0-DR3 / DR7 on every processor) ----
  enum class hw_kind { execute, write, access };  // x86 has no read-only watch: access = read or write
  absl::Status set_hardware_breakpoint(hw_kind kind, uint64_t address, uint32_t length);
  absl::Status clear_hardware_breakpoint(hw_kind kind, uint64_t address, uint32_t length);

  // ---- Run control ----
  absl::Status resume(bool step);
  absl::Status interrupt();  // [any-thread]
  // A stop, or nothing after `timeout`. A stop is reported once.
  absl::StatusOr<std::optional<stop_event>> wait_stop(std::chrono::milliseconds timeout);
  bool running() const { return running_; }  // [any-thread]
  bool lost() const { return lost_; }

  uint16_t current_processor() const { return current_processor_; }
  uint32_t processor_count() const { return processor_count_; }
  const state_change& last_state() const { return last_state_; }
  // The last bugcheck reported since attach or the last reboot.
  const std::optional<stop_event>& last_bugcheck() const { return last_bugcheck_; }

  // DbgPrint lines captured since the last call. [any-thread]
  std::vector<std::string> take_output();
  std::vector<module_event> modules() const;
  link_stats stats() const { return link_->stats(); }
  std::string describe_link() const { return link_->describe(); }

  // Stops the pump, restores every breakpoint, lets the target run and closes the link.
  absl::Status detach();

 private:
  explicit target(std::unique_ptr<link> link, target_options options);
  struct request_spec {
    uint32_t api = 0;
    uint16_t processor = 0;
    std::vector<uint8_t> union_bytes;  // up to 40
    std::span<const uint8_t> data;
    bool expect_reply = true;
    bool idempotent = true;
  };
  struct reply {
    uint32_t status = 0;
    std::vector<uint8_t> union_bytes;
    std::vector<uint8_t> data;
    // The request was sent more than once (a state change came first, or no reply came), so the
    // target may have carried it out before the copy that was answered.
    bool repeated = false;
  };
  // One manipulate request and its reply. A state change that comes instead of the reply means
  // the target dropped the request and started its wait loop over: the report is taken as the
  // current state (a new stop is queued for wait_stop) and the request is sent again.
  absl::StatusOr<reply> request(const request_spec& spec);
  absl::Status establish();
  // A state change that came while no stop was awaited: the target's current state.
  void take_state_change(const state_change& s);
  // WriteBreakPoint: the handle of the target's new table entry.
  absl::StatusOr<uint32_t> write_breakpoint(uint64_t address);
  // Moves rip past the int3 each processor in hardcoded_breaks_ stopped on (those still there).
  absl::Status skip_hardcoded_breaks(std::optional<uint16_t> only = std::nullopt);
  absl::Status require_halted(const char* what) const;
  // Takes a state change the foreground received (attach, switch, step-over).
  absl::StatusOr<state_change> wait_state_change(std::chrono::milliseconds timeout, bool* restarted);
  void on_debug_io(std::span<const uint8_t> payload);
  void on_halt(const state_change& s);
  stop_event classify(const state_change& s, bool restarted);
  absl::Status continue_target(bool trace, std::optional<uint64_t> dr7 = std::nullopt);
  // Writes DR0-DR3 and DR7 into every processor's special registers; on a failure, puts back
  // what it already changed.
  absl::Status apply_debug_registers();
  uint64_t compute_dr7(std::optional<uint64_t> skip_execute_at) const;
  bool hardware_execute_at(uint64_t pc) const;
  absl::Status rearm_breakpoints(std::optional<uint64_t> except);
  void pump();
  void start_pump();
  void finish_stop(stop_event event);
  absl::StatusOr<size_t> read_memory(uint32_t api, uint64_t address, std::span<uint8_t> buffer);
  absl::Status write_memory(uint32_t api, uint64_t address, std::span<const uint8_t> data);
  void forget_target_state();

  std::unique_ptr<link> link_;
  target_options options_;
  version_info version_;
  state_change last_state_;
  uint16_t current_processor_ = 0;
  uint32_t processor_count_ = 1;
  // Processors whose reported stop is an int3 in the code (DbgBreakPointWithStatus, a driver's
  // __debugbreak), by the int3's address: Windows reports it with rip at the int3, and the
  // debugger moves rip past it before the target runs again.
  std::map<uint16_t, uint64_t> hardcoded_breaks_;

  struct breakpoint {
    std::optional<uint32_t> handle;  // set while written into the target's table
  };
  std::map<uint64_t, breakpoint> breakpoints_;

  struct hw_slot {
    bool used = false;
    hw_kind kind = hw_kind::execute;
    uint64_t address = 0;
    uint32_t length = 1;
  };
  hw_slot hw_[4];
  uint64_t dr7_base_ = 0;   // DR7 bits that are not ours (kept as the target had them)
  bool hw_applied_ = true;  // false after a reboot: written again before the next resume

  std::atomic<bool> running_{false};
  std::atomic<bool> lost_{false};
  std::atomic<bool> interrupt_requested_{false};
  bool stepping_ = false;
  std::thread pump_;
  std::atomic<bool> pump_stop_{false};
  mutable std::mutex stop_mutex_;
  std::condition_variable stop_ready_;
  std::optional<stop_event> pending_stop_;
  std::optional<stop_event> last_bugcheck_;
  bool detached_ = false;
  bool halted_once_ = false;  // a state change came: the target is ours to resume at detach

  mutable std::mutex output_mutex_;
  std::vector<std::string> output_;
  std::string partial_line_;
  std::string bugcheck_text_;  // "*** Fatal System Error" text seen since the last resume
  // Set by cause_bugcheck until the next stop: that stop's break is KdpCauseBugCheck's
  // KeBugCheckEx(MANUALLY_INITIATED_CRASH, 0, 0, 0, 0) even when its message never arrived.
  std::atomic<bool> bugcheck_caused_{false};
  std::vector<module_event> modules_;

  // Physical memory read since the last change (see read_cache.h). memory_epoch_ moves at every
  // stop and every request that is not a read; the cache starts over when it has moved.
  std::atomic<uint64_t> memory_epoch_{0};
  std::mutex cache_mutex_;
  read_cache physical_cache_;
  uint64_t cache_epoch_ = 0;
};

}  // namespace toolhost::kd
