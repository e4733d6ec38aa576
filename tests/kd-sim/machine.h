// The simulated x86-64 machine: physical memory with 4-level page tables (4 KiB and 2 MiB
// pages), per-CPU CONTEXT and KSPECIAL_REGISTERS, MSRs, the kernel's breakpoint table, and a
// tiny interpreter for the handful of instructions its built-in kernel loop uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "windbgkd_structs.h"

namespace kdsim {

inline constexpr uint64_t kKernelBase = 0xFFFFF80000000000ull;
inline constexpr uint64_t kLoopStart = kKernelBase + 0x1000;        // CPU 0's loop
inline constexpr uint64_t kSayHello = kKernelBase + 0x1100;         // calls DbgPrint
inline constexpr uint64_t kIdleLoop = kKernelBase + 0x1200;         // the other CPUs
inline constexpr uint64_t kBreakWithStatus = kKernelBase + 0x1300;  // DbgBreakPointWithStatus: int3; ret
inline constexpr uint64_t kMessage = kKernelBase + 0x2000;
inline constexpr uint64_t kPsLoadedModuleList = kKernelBase + 0x3000;
inline constexpr uint64_t kKdDebuggerData = kKernelBase + 0x3100;
inline constexpr uint64_t kUnmapped = kKernelBase + 0x400000;  // PD entry 2 is not present
inline constexpr uint64_t kPhysicalSize = 16ull << 20;
inline constexpr uint64_t kPml4 = 0x1000;

struct cpu_state {
  CONTEXT context{};
  KSPECIAL_REGISTERS special{};
  std::map<uint32_t, uint64_t> msrs;
  std::vector<uint8_t> staged_context;  // SetContextEx chunks before the commit
  std::chrono::steady_clock::time_point sleep_until{};
  uint32_t data_hits = 0;  // DR slots whose data watch the last instruction triggered
};

struct breakpoint_entry {
  bool used = false;
  uint64_t address = 0;
  uint8_t original = 0;
};

// What executing one instruction led to.
struct step_result {
  enum class kind { none, breakpoint, illegal, dbgprint };
  kind what = kind::none;
  std::string text;  // DbgPrint text
};

// A captured machine (see winguest_image.h): physical memory and processor 0's registers as
// QEMU had them, from tests/guest/windows' snapshot.
struct machine_image {
  std::vector<uint8_t> memory;
  CONTEXT context{};
  KSPECIAL_REGISTERS special{};
  uint64_t gs_base = 0;
};

class machine {
 public:
  explicit machine(int cpus);
  void boot();  // fresh memory, page tables, program, contexts; empty breakpoint table
  // From now on boot() restores `image` instead of building the built-in kernel. Its processor
  // does not execute the image's code: running, it stays where it was captured (breakpoints are
  // written but never hit); break-ins, bugchecks and memory work as on the built-in kernel.
  void use_image(machine_image image);
  bool has_image() const { return image_.has_value(); }
  // Where call_break_with_status sends the processor: the image's DbgBreakPointWithStatus.
  void set_break_with_status(uint64_t va) { break_with_status_ = va; }

  std::optional<uint64_t> translate(uint64_t cr3, uint64_t va) const;
  // Reads/writes as much of the range as is mapped, from the start; returns the byte count.
  uint32_t read_virtual(int cpu, uint64_t va, uint8_t* out, uint32_t size) const;
  uint32_t write_virtual(int cpu, uint64_t va, const uint8_t* in, uint32_t size);
  uint32_t read_physical(uint64_t pa, uint8_t* out, uint32_t size) const;
  uint32_t write_physical(uint64_t pa, const uint8_t* in, uint32_t size);

  step_result step(int cpu);
  bool sleeping(int cpu) const;
  // The CPU calls DbgBreakPointWithStatus(status), as the kernel does for its initial break, a
  // break-in (DBG_STATUS_CONTROL_C) and a bugcheck: the return address is pushed, rcx holds the
  // status and rip points at the routine's int3.
  void call_break_with_status(int cpu, uint64_t status);

  // Debug registers: DR slots (bits 0-3) armed for execution at the CPU's rip, and the data
  // watches the last step triggered (taken, so reported once).
  uint32_t execute_hits(int cpu) const;
  uint32_t take_data_hits(int cpu);

  // Breakpoint table (handles are 1-based).
  std::optional<uint32_t> add_breakpoint(int cpu, uint64_t va);
  bool remove_breakpoint(int cpu, uint32_t handle);
  bool breakpoint_at(uint64_t va) const;
  void delete_breakpoints_in(int cpu, uint64_t from, uint64_t to);  // [from, to)
  std::vector<uint64_t> breakpoint_addresses() const;

  int cpu_count() const { return static_cast<int>(cpus_.size()); }
  cpu_state& cpu(int i) { return cpus_[static_cast<size_t>(i)]; }
  const cpu_state& cpu(int i) const { return cpus_[static_cast<size_t>(i)]; }

 private:
  uint64_t& gpr(CONTEXT& c, int index);
  void watch(int cpu, uint64_t va, uint32_t size, bool write);
  bool push(int cpu, uint64_t value);
  std::optional<uint64_t> pop(int cpu);

  std::vector<uint8_t> memory_;
  std::optional<machine_image> image_;
  uint64_t break_with_status_ = kBreakWithStatus;
  std::vector<cpu_state> cpus_;
  breakpoint_entry table_[32];
};

}  // namespace kdsim
