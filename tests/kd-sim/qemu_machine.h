// The live Windows-shaped guest as the KD target: QEMU runs it, and kd-sim drives it through
// QEMU's gdbstub (GDB remote protocol) as the kernel's debugger code would drive its own
// processors. Physical memory through Qqemu.PhyMemMode:1 (virtual addresses are translated
// through the saved CR3 by machine::translate); registers by QEMU's x86-64 target description
// (general, segment, fs_base/gs_base/k_gs_base, cr0/cr2/cr3/cr4/cr8, efer), read at each stop
// and written back at resume; breakpoints as Z0 (QEMU's guest cannot trap its own int3 to a
// debugger), shown as int3 in memory reads as Windows' int3 would be; DR0-DR3 as Z1-Z4;
// continue, single step, ^C. It cannot reboot the VM.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gdb_remote.h"
#include "machine.h"

namespace kdsim {

class qemu_machine final : public machine {
 public:
  // Connects to QEMU's gdbstub (`spec` as gdb_remote::connect takes it). QEMU stops the VM
  // when a debugger connects; it stays halted until resume(). On failure returns nullptr and
  // sets `error` to a sentence naming the problem.
  static std::unique_ptr<qemu_machine> connect(const std::string& spec, std::string& error);

  bool guest_kernel() const override { return true; }
  bool boot() override { return false; }
  uint32_t read_physical(uint64_t pa, uint8_t* out, uint32_t size) override;
  uint32_t write_physical(uint64_t pa, const uint8_t* in, uint32_t size) override;
  bool insert_breakpoint(int cpu, uint64_t va) override;
  void remove_breakpoint(int cpu, uint64_t va, uint8_t original) override;
  void resume(bool trace, int cpu) override;
  cpu_event run(bool tracing, int current_cpu, const std::function<bool(const std::string&)>& print) override;
  cpu_event halt() override;
  void call_break_with_status(int cpu, uint64_t status) override;

  struct register_slot {
    std::string name;
    int number = 0;     // for the P packet
    size_t offset = 0;  // in the g packet, in bytes
    size_t size = 0;
  };

 private:
  qemu_machine(gdb_remote link, std::vector<std::string> threads, std::vector<register_slot> layout);
  bool fetch_registers();
  void store_registers();
  void sync_hardware_breakpoints();
  cpu_event stop_from(const std::string& reply);
  int cpu_of(const std::string& reply) const;
  bool unwinds_poorly(int cpu, uint64_t rip);
  std::optional<std::vector<uint8_t>> page(uint64_t frame);

  gdb_remote link_;
  std::vector<std::string> threads_;  // gdb thread id of each processor
  std::vector<register_slot> layout_;
  std::vector<cpu_state> fetched_;                  // what QEMU had at the stop: resume writes back the differences
  std::map<uint64_t, std::vector<uint8_t>> pages_;  // 4 KiB frames read while halted
  std::map<uint64_t, uint64_t> inserted_;           // Z0 breakpoints: va -> pa of the int3
  std::vector<std::string> hardware_;               // Z1-Z4 packets in effect ("1,addr,kind")
  std::map<uint64_t, std::vector<std::pair<uint32_t, uint32_t>>> functions_;  // image base -> .pdata ranges
  bool running_ = false;
  bool stepping_ = false;
  std::optional<cpu_event> pending_;  // a stop that needs no run (an int3 at rip, a step out of a break-in)
  struct interrupted {
    int cpu = 0;
    CONTEXT context{};
  };
  std::optional<interrupted> break_in_;  // what a break-in's emulated interrupt interrupted
};

}  // namespace kdsim
