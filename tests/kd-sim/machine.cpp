#include "machine.h"

#include <algorithm>
#include <cstring>

namespace kdsim {
namespace {

constexpr uint64_t kPresent = 1, kLarge = 0x80;
constexpr uint64_t kAddressMask = 0x000FFFFFFFFFF000ull;

uint64_t debug_address(const KSPECIAL_REGISTERS& s, int n) {
  const uint64_t regs[] = {s.KernelDr0, s.KernelDr1, s.KernelDr2, s.KernelDr3};
  return regs[n];
}

}  // namespace

uint64_t machine::cpu_cr3(int cpu) const {
  return cpu < 0 || cpu >= cpu_count() ? default_cr3_ : cpus_[static_cast<size_t>(cpu)].special.Cr3;
}

std::optional<uint64_t> machine::translate(uint64_t cr3, uint64_t va) {
  const uint64_t top = va >> 47;
  if (top != 0 && top != 0x1FFFF) return std::nullopt;  // not canonical
  uint64_t table = cr3 & kAddressMask;
  for (int level = 3; level >= 0; --level) {
    const uint64_t index = (va >> (12 + 9 * level)) & 511;
    uint64_t entry = 0;
    if (read_physical(table + index * 8, reinterpret_cast<uint8_t*>(&entry), 8) != 8) return std::nullopt;
    if ((entry & kPresent) == 0) return std::nullopt;
    if (level == 1 && (entry & kLarge) != 0) return (entry & 0x000FFFFFFFE00000ull) | (va & 0x1FFFFF);
    if (level == 2 && (entry & kLarge) != 0) return (entry & 0x000FFFFFC0000000ull) | (va & 0x3FFFFFFF);
    table = entry & kAddressMask;
  }
  return table | (va & 0xFFF);
}

uint32_t machine::read_space(uint64_t cr3, uint64_t va, uint8_t* out, uint32_t size) {
  uint32_t done = 0;
  while (done < size) {
    auto pa = translate(cr3, va + done);
    if (!pa) break;
    const uint32_t in_page = static_cast<uint32_t>(0x1000 - ((va + done) & 0xFFF));
    const uint32_t n = std::min(in_page, size - done);
    if (read_physical(*pa, out + done, n) != n) break;
    done += n;
  }
  return done;
}

uint32_t machine::write_space(uint64_t cr3, uint64_t va, const uint8_t* in, uint32_t size) {
  uint32_t done = 0;
  while (done < size) {
    auto pa = translate(cr3, va + done);
    if (!pa) break;
    const uint32_t in_page = static_cast<uint32_t>(0x1000 - ((va + done) & 0xFFF));
    const uint32_t n = std::min(in_page, size - done);
    if (write_physical(*pa, in + done, n) != n) break;
    done += n;
  }
  return done;
}

bool machine::insert_breakpoint(int cpu, uint64_t va) {
  const uint8_t int3 = 0xCC;
  return write_virtual(cpu, va, &int3, 1) == 1;
}

void machine::remove_breakpoint(int cpu, uint64_t va, uint8_t original) { write_virtual(cpu, va, &original, 1); }

bool machine::push(int cpu, uint64_t value) {
  CONTEXT& c = cpus_[static_cast<size_t>(cpu)].context;
  c.Rsp -= 8;
  return write_virtual(cpu, c.Rsp, reinterpret_cast<uint8_t*>(&value), 8) == 8;
}

void machine::call_break_with_status(int cpu, uint64_t status) {
  CONTEXT& c = cpus_[static_cast<size_t>(cpu)].context;
  push(cpu, c.Rip);
  c.Rcx = status;
  c.Rip = break_with_status_;
}

uint32_t machine::execute_hits(int cpu, uint64_t rip) const {
  const cpu_state& s = cpus_[static_cast<size_t>(cpu)];
  const uint64_t dr7 = s.special.KernelDr7;
  uint32_t hits = 0;
  for (int n = 0; n < 4; ++n) {
    const bool enabled = ((dr7 >> (2 * n)) & 3) != 0;
    const uint64_t rw = (dr7 >> (16 + 4 * n)) & 3;
    if (enabled && rw == 0 && debug_address(s.special, n) == rip) hits |= 1u << n;
  }
  return hits;
}

}  // namespace kdsim
