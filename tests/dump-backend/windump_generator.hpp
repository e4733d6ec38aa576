// Builds 64-bit Windows crash dumps in memory for the tests, written from the published header
// layout (DUMP_HEADER64 with the full, bitmap and RDMP page layouts) independently of the
// reader under test: its offsets are spelled out here again on purpose.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace toolhost::test {

struct generated_context {
  uint64_t rax = 0x1111, rbx = 0x2222, rcx = 0x3333, rdx = 0x4444, rsi = 0x5555, rdi = 0x6666;
  uint64_t rbp = 0xfffff80000011f00, rsp = 0xfffff80000011e00, r8 = 8, r9 = 9, r10 = 10, r11 = 11;
  uint64_t r12 = 12, r13 = 13, r14 = 14, r15 = 15, rip = 0xfffff80000010123;
  uint32_t eflags = 0x246;
  uint16_t cs = 0x10, ss = 0x18, ds = 0x2b, es = 0x2b, fs = 0x53, gs = 0x2b;
};

struct dump_spec {
  uint32_t type = 1;                               // 1, 5, 6, 8, 9 or 10
  std::map<uint64_t, std::vector<uint8_t>> pages;  // physical page number -> 4096 bytes
  uint64_t dtb = 0;
  uint64_t ps_loaded_module_list = 0xfffff80000012000;
  uint64_t ps_active_process_head = 0xfffff80000013000;
  uint64_t kd_debugger_data_block = 0xfffff80000014000;
  uint32_t bugcheck_code = 0xd1;
  uint64_t bugcheck_parameters[4] = {0x10, 2, 0, 0xfffff80000010123};
  uint32_t processors = 2;
  bool required_dump_space = true;  // fill RequiredDumpSpace with the file's size
  generated_context context;
};

// The dump's bytes.
std::vector<uint8_t> generate_dump(const dump_spec& spec);

// A physical memory with page tables that map, from DTB 0x1000:
//   0xfffff80000010000 -> PA 0x10000 through a 4 KiB page,
//   0xfffff80000200000 -> PA 0x200000 through a 2 MiB page (pages 0x205 and 0x206 present),
//   0xfffff80040000000 -> PA 0x40000000 through a 1 GiB page (page 0x40007 present);
// every data page's byte k is (page number * 31 + k * 7) & 0xff; PsLoadedModuleList
// (0xfffff80000012000 -> PA 0x12000) lists ntoskrnl.exe at 0xfffff80000400000 (0xa00000 bytes)
// and hal.dll at 0xfffff80000e00000 (0x80000 bytes).
dump_spec sample_system(uint32_t type);
uint8_t sample_byte(uint64_t physical_address);

inline constexpr uint64_t kVa4K = 0xfffff80000010000;
inline constexpr uint64_t kVa2M = 0xfffff80000200000;
inline constexpr uint64_t kVa1G = 0xfffff80040000000;

// Where a header field lives (for the perturbation tests).
struct header_field {
  const char* name;
  uint64_t offset;
  uint32_t size;
};
std::vector<header_field> header_fields(uint32_t type);

}  // namespace toolhost::test
