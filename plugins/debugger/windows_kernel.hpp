// The Windows kernel behind a target's memory: found once (dump header, KD's GetVersion, or the
// directory-table and kernel-image scans on a VM's RAM), then read through nt's layout:
// processes, threads, kernel and user modules, the KDBG. Nothing here writes to the target.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

#include "windows_layout.hpp"

namespace toolhost::debugger::windows {

// How the model reads the target: physical memory (may be empty when the backend has none) and
// virtual memory in the backend's current address space (may be empty). Each returns the bytes
// read, a prefix of `out`.
struct memory_access {
  std::function<size_t(uint64_t address, std::span<uint8_t> out)> physical;
  std::function<size_t(uint64_t address, std::span<uint8_t> out)> current_virtual;
};

// What the backend told us (describe's hints); 0 when it did not say.
struct hints {
  uint64_t dtb = 0;
  uint64_t cr3 = 0;  // the stopped vCPU's, a candidate when `dtb` is not given
  uint64_t kernel_base = 0;
  uint64_t module_list = 0;          // PsLoadedModuleList
  uint64_t active_process_head = 0;  // PsActiveProcessHead
  uint64_t kdbg = 0;                 // the KDBG itself (a dump header's KdDebuggerDataBlock)
  uint64_t kdbg_list = 0;            // KdpDebuggerDataListHead (KD's DebuggerDataList)
  std::string source;                // "dump header", "KD GetVersion", ...
};

struct process {
  uint64_t eprocess = 0;
  uint64_t pid = 0, parent_pid = 0;
  uint64_t dtb = 0, user_dtb = 0;
  uint64_t peb = 0, object_table = 0, session = 0, token = 0, vad_root = 0;
  int64_t create_time = 0;
  uint32_t active_threads = 0;
  std::optional<uint32_t> session_id;  // none for System and the idle process
  std::string image;                   // ImageFileName (15 characters at most)
};

struct thread {
  uint64_t ethread = 0, process = 0;
  uint64_t pid = 0, tid = 0;
  uint64_t teb = 0, win32thread = 0, start = 0, win32_start = 0;
  uint64_t initial_stack = 0, stack_base = 0, stack_limit = 0, kernel_stack = 0, trap_frame = 0;
  uint8_t state = 0, wait_reason = 0, wait_mode = 0, wait_irql = 0;
  int8_t priority = 0, base_priority = 0;
  uint32_t kernel_time = 0, user_time = 0;
};

struct loaded_module {
  uint64_t base = 0, size = 0;
  std::string name, path;  // BaseDllName, FullDllName
  uint32_t timestamp = 0, checksum = 0;
};

class kernel {
 public:
  // Finds the kernel. NotFound (with the reason) when the memory holds no Windows kernel: the
  // target then stays a plain one.
  static absl::StatusOr<kernel> discover(const memory_access& memory, const hints& h);

  // After nt's symbols are loaded: its layout and the addresses of its globals (nullopt when the
  // PDB is missing: exports and the KDBG then stand in).
  struct nt_symbols {
    const types::type_table* types = nullptr;
    std::function<std::optional<uint64_t>(std::string_view name)> address;  // "PsLoadedModuleList" -> VA
  };
  void attach_symbols(const nt_symbols& nt);

  uint64_t dtb() const { return dtb_; }
  uint64_t kernel_base() const { return kernel_base_; }
  uint32_t kernel_size() const { return kernel_size_; }
  uint32_t build() const { return build_; }
  uint32_t major() const { return major_; }
  uint32_t minor() const { return minor_; }
  int self_map_index() const { return self_map_; }
  uint64_t kdbg() const { return kdbg_; }
  bool kdbg_was_encoded() const { return kdbg_encoded_; }
  uint64_t module_list() const { return module_list_; }
  uint64_t active_process_head() const { return active_process_head_; }
  uint64_t processor_block() const { return processor_block_; }  // KiProcessorBlock
  const nt_layout& layout() const { return layout_; }
  const std::string& how() const { return how_; }                   // how it was found
  const std::vector<std::string>& notes() const { return notes_; }  // what did not work, for vertarget

  // Reads `va` in the address space of `dtb` (0: the kernel's) through the page tables, or, when
  // there is no physical memory, through the backend's current space.
  size_t read(uint64_t dtb, uint64_t va, std::span<uint8_t> out) const;
  std::optional<uint64_t> read_u64(uint64_t va, uint64_t dtb = 0) const;
  std::optional<uint32_t> read_u32(uint64_t va, uint64_t dtb = 0) const;
  // A UNICODE_STRING at `va` (Length, MaximumLength, Buffer) as UTF-8; "" when unreadable.
  std::string unicode_string(uint64_t va, uint64_t dtb = 0) const;

  // Walks (bounded: 65536 processes, 16384 threads a process, 4096 modules).
  absl::StatusOr<std::vector<process>> processes() const;
  absl::StatusOr<process> process_at(uint64_t eprocess) const;
  std::vector<thread> threads(const process& p) const;
  absl::StatusOr<thread> thread_at(uint64_t ethread) const;
  absl::StatusOr<std::vector<loaded_module>> kernel_modules() const;
  absl::StatusOr<std::vector<loaded_module>> user_modules(const process& p) const;
  // The thread running on processor `n` (KiProcessorBlock[n]->CurrentThread), 0 when unknown.
  uint64_t current_thread(uint32_t processor) const;
  // nt!KeNumberProcessors (1..2048), nullopt when nt's symbols do not name it or it is unreadable.
  std::optional<uint32_t> processor_count() const;
  // The handles in use in a process's handle table; nullopt when the table cannot be read.
  std::optional<uint32_t> handle_count(const process& p) const;

 private:
  kernel() = default;
  // BaseDllName of the first entry of a PsLoadedModuleList (the kernel's own), "" when unreadable.
  std::string first_module_name(uint64_t module_list) const;
  bool valid_kdbg(uint64_t va, std::vector<uint8_t>& block);

  memory_access memory_;
  uint64_t dtb_ = 0, kernel_base_ = 0;
  uint32_t kernel_size_ = 0;
  uint32_t build_ = 0, major_ = 0, minor_ = 0;
  int self_map_ = -1;
  uint64_t kdbg_ = 0;
  bool kdbg_encoded_ = false;
  uint64_t module_list_ = 0, active_process_head_ = 0, initial_process_ = 0, processor_block_ = 0;
  uint64_t number_processors_ = 0;  // &KeNumberProcessors
  nt_layout layout_;
  std::string how_;
  std::vector<std::string> notes_;
  hints hints_;
};

// KdCopyDataBlock's decoding of one qword of an encoded KDBG.
uint64_t decode_kdbg_qword(uint64_t encoded, uint64_t wait_never, uint64_t wait_always, uint64_t block_encoded_address);

}  // namespace toolhost::debugger::windows
