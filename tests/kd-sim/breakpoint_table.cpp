#include "breakpoint_table.h"

namespace kdsim {

std::optional<uint32_t> breakpoint_table::add(machine& m, int cpu, uint64_t va) {
  uint8_t original = 0;
  if (m.read_virtual(cpu, va, &original, 1) != 1) return std::nullopt;
  if (contains(va)) return std::nullopt;  // KdpAddBreakpoint refuses a second entry at one address
  for (uint32_t i = 0; i < 32; ++i) {
    if (table_[i].used) continue;
    if (!m.insert_breakpoint(cpu, va)) return std::nullopt;
    table_[i] = {true, va, original};
    return i + 1;
  }
  return std::nullopt;
}

bool breakpoint_table::remove(machine& m, int cpu, uint32_t handle) {
  if (handle == 0 || handle > 32 || !table_[handle - 1].used) return false;
  entry& e = table_[handle - 1];
  m.remove_breakpoint(cpu, e.address, e.original);
  e = {};
  return true;
}

bool breakpoint_table::contains(uint64_t va) const {
  for (const auto& e : table_) {
    if (e.used && e.address == va) return true;
  }
  return false;
}

void breakpoint_table::delete_in(machine& m, int cpu, uint64_t from, uint64_t to) {
  for (uint32_t i = 0; i < 32; ++i) {
    if (table_[i].used && table_[i].address >= from && table_[i].address < to) remove(m, cpu, i + 1);
  }
}

std::vector<uint64_t> breakpoint_table::addresses() const {
  std::vector<uint64_t> out;
  for (const auto& e : table_) {
    if (e.used) out.push_back(e.address);
  }
  return out;
}

void breakpoint_table::clear() {
  for (auto& e : table_) e = {};
}

}  // namespace kdsim
