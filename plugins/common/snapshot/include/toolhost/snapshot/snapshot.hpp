// What every read-only target (a dump file, a VM's RAM) offers the debug-target adapter: memory
// by physical and/or virtual address, a register map, threads with their registers, modules
// and hints. make_session (session.hpp) turns it into a debug-target session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <toolhost/debug_target.h>
#include <toolhost/sdk/debug_target.hpp>

namespace toolhost::snapshots {

struct register_def {
  std::string name;  // gdb's names: rax, ..., eflags, cs, fs_base, cr3
  uint32_t bits = 64;
  std::string role;  // "pc", "sp", "fp", "flags", "cr3" or ""
};

// The x86-64 registers a snapshot may hold, in register-map order. Each takes 8 bytes in the
// register buffer (little-endian at 8 * index).
enum x86_reg : int {
  rax,
  rbx,
  rcx,
  rdx,
  rsi,
  rdi,
  rbp,
  rsp,
  r8,
  r9,
  r10,
  r11,
  r12,
  r13,
  r14,
  r15,
  rip,
  eflags,
  cs,
  ss,
  ds,
  es,
  fs,
  gs,
  fs_base,
  gs_base,
  cr0,
  cr2,
  cr3,
  cr4,
  x86_reg_count
};
register_def x86_register(x86_reg r);

struct thread_state {
  int64_t id = 0;
  std::string name;
  std::vector<uint64_t> values;  // one per register of the snapshot's map
};

// A loaded module as the debug-target session lists it.
using module_info = sdk::dt_module;

class snapshot {
 public:
  virtual ~snapshot() = default;

  virtual const char* os() const = 0;    // "linux", "windows" or ""
  virtual const char* kind() const = 0;  // "process", "system" or "dump"
  virtual bool has_physical() const = 0;
  virtual bool has_virtual() const = 0;
  virtual bool is_live() const { return false; }

  // Reads a prefix of `out`; NotFound when not even one byte is there.
  virtual absl::StatusOr<size_t> read_physical(uint64_t address, std::span<uint8_t> out) = 0;
  virtual absl::StatusOr<size_t> read_virtual(uint64_t address, std::span<uint8_t> out, int64_t thread) = 0;
  virtual absl::Status write_physical(uint64_t, std::span<const uint8_t>) {
    return absl::UnimplementedError("this target is read-only");
  }

  // The stop the snapshot was taken at (a dump's signal or bugcheck), reported once.
  virtual toolhost_dt_stop_t initial_stop() const = 0;
  // Extra facts for describe's "hints", as JSON members without braces ("\"dtb\":\"0x1000\"").
  virtual std::string hints_json() const = 0;
  // The siginfo of the stop (a core's NT_SIGINFO note), empty when the snapshot has none.
  virtual std::string siginfo() const { return {}; }
  // Why run control is impossible, one sentence.
  virtual const char* why_no_run_control() const = 0;

  std::vector<x86_reg> registers;  // the map, in order
  std::vector<thread_state> threads;
  std::vector<module_info> modules;
};

}  // namespace toolhost::snapshots
