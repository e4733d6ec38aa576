// The kernel's breakpoint table (KdpBreakpointTable): 32 entries, the lowest free one first,
// a second entry at one address refused, the original byte kept for the restore. Where the
// breakpoint instruction goes is the machine's business (machine::insert_breakpoint).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "machine.h"

namespace kdsim {

class breakpoint_table {
 public:
  // Handles are 1-based, as KdpAddBreakpoint returns them.
  std::optional<uint32_t> add(machine& m, int cpu, uint64_t va);
  bool remove(machine& m, int cpu, uint32_t handle);
  bool contains(uint64_t va) const;
  void delete_in(machine& m, int cpu, uint64_t from, uint64_t to);  // [from, to)
  std::vector<uint64_t> addresses() const;
  void clear();  // a reboot: the new kernel's table is empty

 private:
  struct entry {
    bool used = false;
    uint64_t address = 0;
    uint8_t original = 0;
  };
  entry table_[32];
};

}  // namespace kdsim
