// A Windows-shaped kernel address space for the symbol tests, saved as a full crash dump with
// the project's own writer (toolhost::windump): 4-level page tables from a DTB, PE images placed
// at module bases the way the loader lays them out (each section at base + its RVA, from the
// real fixture files, base relocations applied), a PsLoadedModuleList of _KLDR_DATA_TABLE_ENTRYs (Windows 10 19041
// layout), and data written at virtual addresses. Pages can be left out to make holes.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <absl/status/status.h>

namespace toolhost::test::windows {

struct kernel_module {
  std::string file;  // the image file to load
  uint64_t base = 0;
  std::string base_name;  // "wsfix.sys"
  std::string full_name;  // "\\SystemRoot\\system32\\drivers\\wsfix.sys"
  uint32_t size = 0;      // SizeOfImage (filled by load_image)
  uint32_t timestamp = 0, checksum = 0;
};

// Page flags for map(): the x64 PTE bits.
inline constexpr uint64_t kWritablePage = 1ull << 1, kUserPage = 1ull << 2, kNoExecutePage = 1ull << 63;

class kernel_memory {
 public:
  static constexpr uint64_t kDtb = 0x1000;
  static constexpr int kSelfMapIndex = 0x1ed;  // PTE_BASE 0xfffff68000000000, as before Windows 10 1607

  kernel_memory();

  // Maps [va, va + size) to fresh zeroed 4 KiB pages in the address space of `dtb` (0: the
  // kernel's); flags are PTE bits on top of present.
  void map(uint64_t va, uint64_t size, uint64_t flags = kWritablePage, uint64_t dtb = 0);
  // A 2 MiB or 1 GiB leaf (PDE / PDPTE with PS) mapping `va` to physical `pa` (aligned); only the
  // pages later written hold data (the dump keeps runs of present pages).
  void map_large(uint64_t va, uint64_t pa, uint64_t page_size, uint64_t flags = kWritablePage | kNoExecutePage);
  // A process's address space: a new PML4 with the kernel's upper half and its own self-map.
  uint64_t new_address_space();
  void write(uint64_t va, const void* data, size_t size, uint64_t dtb = 0);
  template <typename T>
  void put(uint64_t va, T value, uint64_t dtb = 0) {
    write(va, &value, sizeof value, dtb);
  }
  void put_unicode_string(uint64_t va, uint64_t buffer_va, const std::string& ascii, uint64_t dtb = 0);
  // Removes the mapping of the page holding `va` (a paged-out page: its PTE is not present).
  void unmap_page(uint64_t va, uint64_t dtb = 0);
  // Sets the PTE of the page holding `va` to `value` (a transition or paged-out PTE, ...).
  void set_pte(uint64_t va, uint64_t value, uint64_t dtb = 0);
  // The physical address `va` maps to in `dtb`'s space (0 when not mapped).
  uint64_t physical_of(uint64_t va, uint64_t dtb = 0);

  // Loads a PE image file at m.base and fills m.size, m.timestamp, m.checksum.
  void load_image(kernel_module& m);
  // PsLoadedModuleList at `head` (a LIST_ENTRY) over the modules, entries allocated at `entries`.
  void module_list(uint64_t head, uint64_t entries, const std::vector<kernel_module>& modules);

  // Writes a full (type 1) dump of everything mapped; the header names `module_list_head`.
  absl::Status write_dump(const std::string& path, uint64_t module_list_head, uint64_t rip = 0) const;
  struct dump_header {
    uint64_t dtb = kDtb;
    uint64_t module_list_head = 0;
    uint64_t active_process_head = 0;
    uint64_t kd_debugger_data_block = 0;
    uint64_t rip = 0, rsp = 0;
  };
  absl::Status write_dump(const std::string& path, const dump_header& header) const;

 private:
  uint64_t allocate_page();
  std::array<uint8_t, 4096>& page(uint64_t physical) { return pages_[physical & ~0xfffull]; }
  // The entry slot for `va` at `level` (0 PML4E ... 3 PTE), creating the tables above it;
  // `user` marks the tables made on the way user-accessible.
  uint64_t entry_address(uint64_t dtb, uint64_t va, int level, bool user);
  uint64_t read_u64(uint64_t physical);
  void write_u64(uint64_t physical, uint64_t value);

  std::map<uint64_t, std::array<uint8_t, 4096>> pages_;  // physical page -> bytes
  uint64_t next_free_ = 0x2000;
};

}  // namespace toolhost::test::windows
