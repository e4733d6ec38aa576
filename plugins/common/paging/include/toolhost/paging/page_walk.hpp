// x86-64 virtual-to-physical translation: the 4-level walk (no LA57) with 1 GiB (PDPTE.PS)
// and 2 MiB (PDE.PS) leaves, over whatever can read physical memory (a dump, a VM's RAM).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace toolhost::paging {

// Reads exactly `out.size()` bytes of physical memory at `address`; an error when it cannot.
using read_physical_fn = std::function<absl::Status(uint64_t address, std::span<uint8_t> out)>;

inline constexpr uint64_t kPageSize4K = 0x1000;
inline constexpr uint64_t kPageSize2M = 0x200000;
inline constexpr uint64_t kPageSize1G = 0x40000000;

// The physical address bits of a CR3 value (drops PCID and the no-flush bit).
inline constexpr uint64_t cr3_table(uint64_t cr3) { return cr3 & 0x000ffffffffff000ull; }

// True for addresses whose bits 63..47 are all equal.
bool is_canonical(uint64_t va);

struct translation {
  uint64_t physical = 0;                      // the physical address of `va` itself
  uint64_t page_size = 0;                     // kPageSize4K, kPageSize2M or kPageSize1G
  uint64_t page_base = 0;                     // physical address of the leaf page
  bool writable = false;                      // effective: every level allows it
  bool user = false;                          // effective: every level allows it
  bool no_execute = false;                    // effective: any level forbids it
  int levels = 0;                             // entries read: 2 (1 GiB leaf), 3 (2 MiB) or 4 (4 KiB)
  std::array<uint64_t, 4> entries{};          // PML4E, PDPTE, PDE, PTE as read (levels of them)
  std::array<uint64_t, 4> entry_addresses{};  // where each entry was read from
};

// Translates `va` through the tables at `cr3`. NotFound (naming the level) when an entry is not
// present, InvalidArgument for a non-canonical address, the reader's error when a table cannot
// be read.
absl::StatusOr<translation> translate(uint64_t cr3, uint64_t va, const read_physical_fn& read);

// Reads virtual memory page by page: returns the number of bytes read, a prefix of `out` that
// stops at the first page that does not translate or cannot be read. The error of that first
// page when nothing at all was read.
absl::StatusOr<size_t> read_virtual(uint64_t cr3, uint64_t va, std::span<uint8_t> out, const read_physical_fn& read);

}  // namespace toolhost::paging
