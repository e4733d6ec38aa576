// Reads a 64-bit Windows kernel crash dump held in memory (usually a read-only mapping of the
// file): the header facts and physical memory. Every size, count and offset the file declares
// is checked against the file before use; a bad one is an InvalidArgument/OutOfRange error that
// names the field.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace toolhost::windump {

// The integer and control registers of an AMD64 CONTEXT.
struct amd64_context {
  uint64_t rax = 0, rbx = 0, rcx = 0, rdx = 0, rsi = 0, rdi = 0, rbp = 0, rsp = 0;
  uint64_t r8 = 0, r9 = 0, r10 = 0, r11 = 0, r12 = 0, r13 = 0, r14 = 0, r15 = 0;
  uint64_t rip = 0;
  uint32_t eflags = 0;
  uint16_t cs = 0, ds = 0, es = 0, fs = 0, gs = 0, ss = 0;
};

struct header_facts {
  uint32_t dump_type = 0;
  uint32_t major_version = 0;
  uint32_t minor_version = 0;
  uint64_t directory_table_base = 0;
  uint64_t pfn_database = 0;
  uint64_t ps_loaded_module_list = 0;
  uint64_t ps_active_process_head = 0;
  uint64_t kd_debugger_data_block = 0;
  uint32_t number_processors = 0;
  uint32_t bugcheck_code = 0;
  std::array<uint64_t, 4> bugcheck_parameters{};
  uint32_t exception_code = 0;
  uint64_t exception_address = 0;
  uint64_t system_time = 0;
  std::string comment;
  amd64_context context;
};

// A run of physical pages stored back to back in the file.
struct page_run {
  uint64_t first_page = 0;  // physical page number
  uint64_t page_count = 0;
  uint64_t file_offset = 0;  // of the first page
};

// The name of a dump type ("full", "bitmap", ...), or "unknown".
const char* dump_type_name(uint32_t type);

class dump_reader {
 public:
  // Parses the dump in `file`, which must outlive the reader.
  static absl::StatusOr<dump_reader> parse(std::span<const uint8_t> file);

  const header_facts& header() const { return header_; }
  const std::vector<page_run>& runs() const { return runs_; }
  uint64_t present_pages() const { return present_pages_; }

  // Copies physical memory at `address` into `out`; returns how many bytes were present (a
  // prefix: it stops at the first page the dump does not hold).
  size_t read_physical(uint64_t address, std::span<uint8_t> out) const;
  // As read_physical, but all of `out` or an error naming the first missing page.
  absl::Status read_physical_exact(uint64_t address, std::span<uint8_t> out) const;

 private:
  dump_reader() = default;
  const page_run* find(uint64_t page) const;

  std::span<const uint8_t> file_;
  header_facts header_;
  std::vector<page_run> runs_;  // sorted by first_page, not overlapping
  uint64_t present_pages_ = 0;
};

}  // namespace toolhost::windump
