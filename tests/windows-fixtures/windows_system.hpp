// A Windows 10 19041-shaped system in memory for the kernel-model tests: ntoskrnl.exe (the
// ntfix fixture) and two drivers loaded, KUSER_SHARED_DATA, processes with their own page
// tables, user pages, PEB loader lists and handle tables, two threads each, a processor block,
// and a KDBG (plain or encoded). Every address and value the tests check is recorded here; nt's
// global addresses come from llvm-pdbutil.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_memory.hpp"

namespace toolhost::test::windows {

struct system_thread {
  uint64_t ethread = 0, tid = 0, teb = 0;
  uint8_t state = 0, wait_reason = 0;
};

struct system_process {
  std::string image;  // ImageFileName
  uint64_t pid = 0, parent = 0;
  uint64_t eprocess = 0, dtb = 0, peb = 0, object_table = 0;
  uint32_t session_id = 0;  // for all but System
  uint32_t handles = 0;
  uint64_t user_page = 0;  // a user VA mapped in this process only, filled with `fill`
  uint8_t fill = 0;
  std::vector<system_thread> threads;
  std::vector<std::string> user_modules;  // PEB InLoadOrderModuleList base names
};

struct windows_system {
  static constexpr uint64_t kNtBase = 0xfffff80012000000;
  static constexpr uint64_t kFixBase = 0xfffff80014000000;
  static constexpr uint64_t kDrvBase = 0xfffff80014100000;
  static constexpr uint64_t kPool = 0xffffa00000000000;      // EPROCESS, ETHREAD, tables, strings
  static constexpr uint64_t kUserData = 0x000000007ffe1000;  // one page of each process's own
  static constexpr uint64_t kPebBase = 0x000000e3a5d40000;
  static constexpr uint32_t kBuild = 19041;

  kernel_memory memory;
  std::vector<kernel_module> modules;
  std::vector<system_process> processes;
  uint64_t module_list = 0, active_process_head = 0, kdbg = 0, kiprocessor_block = 0, prcb = 0;
  uint64_t current_thread = 0;            // KiProcessorBlock[0]->CurrentThread
  std::vector<uint64_t> running_threads;  // KiProcessorBlock[n]->CurrentThread (KeNumberProcessors of them)
  // Kernel pages of each kind for !pte / !vtop: a 2 MiB and a 1 GiB leaf (each with `kLargeMark`
  // written 0x1238 bytes in), a transition PTE and a paged-out one (their values here).
  static constexpr uint64_t kLarge2m = 0xfffff80040000000, kLarge1g = 0xfffff80080000000;
  static constexpr uint64_t kTransitionPage = 0xfffff80014300000, kPagedOutPage = 0xfffff80014301000;
  static constexpr uint64_t kLargeMark = 0x1122334455667788;
  uint64_t transition_pte = 0, paged_out_pte = 0;
  bool kdbg_encoded = false;

  // Builds it. `encoded`: the KDBG encoded as Windows does when booted without /debug.
  explicit windows_system(bool encoded = false);
  // nt's global `name` (from llvm-pdbutil's publics and globals).
  uint64_t nt_symbol(const std::string& name) const;
  // Writes a full dump; `header_hints` false leaves DTB, PsLoadedModuleList and the KDBG out of
  // the header, so that a debugger has to find them by scanning.
  std::string write_dump(const std::string& name, bool header_hints = true) const;
};

}  // namespace toolhost::test::windows
