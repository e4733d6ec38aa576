// The simulated machine: 16 MiB of physical memory holding kd-sim's built-in kernel and a tiny
// interpreter for the handful of instructions its loop uses, or a snapshot of the
// Windows-shaped guest (winguest_image.h), whose processor stays where it was captured.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "machine.h"

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

// A captured machine (see winguest_image.h): physical memory and processor 0's registers as
// QEMU had them, from tests/guest/windows' snapshot.
struct machine_image {
  std::vector<uint8_t> memory;
  CONTEXT context{};
  KSPECIAL_REGISTERS special{};
  uint64_t gs_base = 0;
};

class sim_machine final : public machine {
 public:
  explicit sim_machine(int cpus);
  // Serves `image` instead of the built-in kernel. Its processor does not execute the image's
  // code: running, it stays where it was captured (breakpoints are written but never hit);
  // break-ins, bugchecks and memory work as on the built-in kernel. boot() restores it.
  sim_machine(int cpus, machine_image image);

  bool guest_kernel() const override { return image_.has_value(); }
  bool boot() override;  // fresh memory, page tables, program, contexts
  uint32_t read_physical(uint64_t pa, uint8_t* out, uint32_t size) override;
  uint32_t write_physical(uint64_t pa, const uint8_t* in, uint32_t size) override;
  void resume(bool, int) override {}  // the interpreter runs from the saved states themselves
  cpu_event run(bool tracing, int current_cpu, const std::function<bool(const std::string&)>& print) override;
  void call_break_with_status(int cpu, uint64_t status) override;

 private:
  // What executing one instruction led to.
  struct step_result {
    enum class kind { none, breakpoint, illegal, dbgprint };
    kind what = kind::none;
    std::string text;  // DbgPrint text
  };
  struct cpu_extra {
    std::chrono::steady_clock::time_point sleep_until{};
    uint32_t data_hits = 0;  // DR slots whose data watch the last instruction triggered
  };

  step_result step(int cpu);
  bool sleeping(int cpu) const;
  uint32_t take_data_hits(int cpu);
  uint64_t& gpr(CONTEXT& c, int index);
  void watch(int cpu, uint64_t va, uint32_t size, bool write);
  bool push_watched(int cpu, uint64_t value);
  std::optional<uint64_t> pop_watched(int cpu);

  std::vector<uint8_t> memory_;
  std::optional<machine_image> image_;
  std::vector<cpu_extra> extra_;
};

}  // namespace kdsim
