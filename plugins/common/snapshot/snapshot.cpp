#include "toolhost/snapshot/snapshot.hpp"

namespace toolhost::snapshots {

register_def x86_register(x86_reg r) {
  static const char* const kNames[] = {"rax", "rbx", "rcx", "rdx", "rsi",     "rdi",     "rbp", "rsp",    "r8",  "r9",
                                       "r10", "r11", "r12", "r13", "r14",     "r15",     "rip", "eflags", "cs",  "ss",
                                       "ds",  "es",  "fs",  "gs",  "fs_base", "gs_base", "cr0", "cr2",    "cr3", "cr4"};
  register_def d;
  d.name = kNames[r];
  if (r == eflags) d.bits = 32;
  if (r >= cs && r <= gs) d.bits = 16;
  if (r == rip) d.role = "pc";
  if (r == rsp) d.role = "sp";
  if (r == rbp) d.role = "fp";
  if (r == eflags) d.role = "flags";
  if (r == cr3) d.role = "cr3";
  return d;
}

}  // namespace toolhost::snapshots
