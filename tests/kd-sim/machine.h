// The x86-64 machine the target side of KD serves, as the kernel's debugger code sees it: processors whose
// state was saved when they entered the debugger, physical memory with 4-level page tables, a
// way to plant a software breakpoint, and run control. Two implementations: sim_machine (the
// built-in kernel or a snapshot of the Windows-shaped guest) and qemu_machine (the live guest
// behind QEMU's gdbstub). kd_server is written against this interface only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "windbgkd_structs.h"

namespace kdsim {

inline constexpr uint64_t kMsrFsBase = 0xC0000100, kMsrGsBase = 0xC0000101, kMsrKernelGsBase = 0xC0000102;
inline constexpr uint64_t kMsrEfer = 0xC0000080;

// A processor's state as the kernel saved it on entry to the debugger (KPRCB.ProcessorState):
// the debugger reads and changes it while the machine is halted; resume() loads it.
struct cpu_state {
  CONTEXT context{};
  KSPECIAL_REGISTERS special{};
  std::map<uint32_t, uint64_t> msrs;
  std::vector<uint8_t> staged_context;  // SetContextEx chunks before the commit
};

// What the processors did while running (machine::run).
struct cpu_event {
  enum class kind {
    none,         // still running
    breakpoint,   // an int3 executed: rip at the int3, as Windows reports it
    single_step,  // the trace flag (traced) or debug registers (dr_hits: DR6 bits 0-3)
    illegal,      // an instruction the machine cannot execute
    lost,         // the machine went away (QEMU exited); nothing more will happen
  } what = kind::none;
  int cpu = 0;
  uint32_t dr_hits = 0;
  bool traced = false;
  std::string why;  // for `lost`
};

class machine {
 public:
  explicit machine(int cpus) : cpus_(static_cast<size_t>(cpus)) {}
  virtual ~machine() = default;
  machine(const machine&) = delete;
  machine& operator=(const machine&) = delete;

  // True when the machine runs the Windows-shaped guest's kernel (a snapshot or the live VM):
  // GetVersion then comes from its KPCR.KdVersionBlock. False: kd-sim's built-in kernel.
  virtual bool guest_kernel() const = 0;
  // Starts the machine afresh (a reboot); false when it cannot (the live VM cannot restart).
  virtual bool boot() = 0;

  int cpu_count() const { return static_cast<int>(cpus_.size()); }
  cpu_state& cpu(int i) { return cpus_[static_cast<size_t>(i)]; }
  const cpu_state& cpu(int i) const { return cpus_[static_cast<size_t>(i)]; }

  // Physical memory: as much of the range as exists, from the start; returns the byte count.
  virtual uint32_t read_physical(uint64_t pa, uint8_t* out, uint32_t size) = 0;
  virtual uint32_t write_physical(uint64_t pa, const uint8_t* in, uint32_t size) = 0;
  // Virtual memory through the page tables at `cr3` (4 KiB, 2 MiB and 1 GiB pages), or through
  // processor `cpu`'s saved CR3: as much of the range as is mapped, from the start.
  std::optional<uint64_t> translate(uint64_t cr3, uint64_t va);
  uint32_t read_space(uint64_t cr3, uint64_t va, uint8_t* out, uint32_t size);
  uint32_t write_space(uint64_t cr3, uint64_t va, const uint8_t* in, uint32_t size);
  uint32_t read_virtual(int cpu, uint64_t va, uint8_t* out, uint32_t size) {
    return read_space(cpu_cr3(cpu), va, out, size);
  }
  uint32_t write_virtual(int cpu, uint64_t va, const uint8_t* in, uint32_t size) {
    return write_space(cpu_cr3(cpu), va, in, size);
  }

  // A software breakpoint at `va` (the kernel's breakpoint table decides where; see
  // breakpoint_table.h). The default writes int3 into memory as KdpAddBreakpoint does and puts
  // `original` back on removal.
  virtual bool insert_breakpoint(int cpu, uint64_t va);
  virtual void remove_breakpoint(int cpu, uint64_t va, uint8_t original);

  // Run control. resume(): the processors go on from their saved states (trace: processor
  // `cpu` executes one instruction). run(): called over and over while running; does a slice
  // of work (or polls), calls `print` for DbgPrint text (false from it ends the slice) and
  // returns what stopped the machine, if anything. halt(): a break-in's interrupt: every
  // processor stops now and saves its state; returns a stop that happened meanwhile, if any.
  virtual void resume(bool trace, int cpu) = 0;
  virtual cpu_event run(bool tracing, int current_cpu, const std::function<bool(const std::string&)>& print) = 0;
  virtual cpu_event halt() { return {}; }

  // The processor calls DbgBreakPointWithStatus(status), as the kernel does for its initial
  // break, a break-in (DBG_STATUS_CONTROL_C) and a bugcheck: the return address is pushed, rcx
  // holds the status and rip points at the routine's int3.
  virtual void call_break_with_status(int cpu, uint64_t status);
  void set_break_with_status(uint64_t va) { break_with_status_ = va; }
  uint64_t break_with_status() const { return break_with_status_; }

  // Debug registers: DR slots (bits 0-3) armed for execution at `rip` on processor `cpu`.
  uint32_t execute_hits(int cpu, uint64_t rip) const;

 protected:
  uint64_t cpu_cr3(int cpu) const;
  bool push(int cpu, uint64_t value);

  std::vector<cpu_state> cpus_;
  uint64_t break_with_status_ = 0;
  uint64_t default_cr3_ = 0;  // for cpu < 0 (the built-in kernel's boot)
};

}  // namespace kdsim
