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

class kernel_memory {
 public:
  static constexpr uint64_t kDtb = 0x1000;

  kernel_memory();

  // Maps [va, va + size) to fresh zeroed 4 KiB pages (kernel, writable, executable).
  void map(uint64_t va, uint64_t size);
  void write(uint64_t va, const void* data, size_t size);
  template <typename T>
  void put(uint64_t va, T value) {
    write(va, &value, sizeof value);
  }
  void put_unicode_string(uint64_t va, uint64_t buffer_va, const std::string& ascii);
  // Removes the mapping of the page holding `va` (a paged-out page: its PTE is not present).
  void unmap_page(uint64_t va);

  // Loads a PE image file at m.base and fills m.size, m.timestamp, m.checksum.
  void load_image(kernel_module& m);
  // PsLoadedModuleList at `head` (a LIST_ENTRY) over the modules, entries allocated at `entries`.
  void module_list(uint64_t head, uint64_t entries, const std::vector<kernel_module>& modules);

  // Writes a full (type 1) dump of everything mapped; the header names `module_list_head`.
  absl::Status write_dump(const std::string& path, uint64_t module_list_head, uint64_t rip = 0) const;

 private:
  uint64_t allocate_page();
  std::array<uint8_t, 4096>& page(uint64_t physical) { return pages_[physical & ~0xfffull]; }
  // The PTE slot for `va`, creating the tables above it.
  uint64_t pte_address(uint64_t va);
  uint64_t read_u64(uint64_t physical);
  void write_u64(uint64_t physical, uint64_t value);
  uint64_t translate(uint64_t va);  // 0 when not mapped

  std::map<uint64_t, std::array<uint8_t, 4096>> pages_;  // physical page -> bytes
  uint64_t next_free_ = 0x2000;
};

}  // namespace toolhost::test::windows
