// A running QEMU guest's RAM, read (and written) in the QEMU process with
// process_vm_readv/writev. Physical addresses go through the guest's RAM layout (derived
// from QMP's `info mtree -f` when a QMP socket is given, else the low RAM below 2 GiB from the
// command line's -m); virtual addresses through the page walk when a CR3 is given.
#pragma once

#include <memory>
#include <string>

#include <absl/status/statusor.h>

#include <toolhost/snapshot/snapshot.hpp>

namespace toolhost::memory_backend {

struct memory_options {
  int pid = 0;       // 0: find the one qemu-system-* process
  std::string qmp;   // QMP socket path; empty: QEMU's own -qmp unix: socket if it has one,
                     // else the command line's -m; "none": the command line only
  uint64_t cr3 = 0;  // page-table base for virtual addresses; 0: physical only
  int timeout_ms = 5000;
};

// Parses `connect` ("pid=N,qmp=PATH,cr3=0x...", or just "N") and `options_json` (the same keys).
absl::StatusOr<memory_options> parse_memory_options(const std::string& connect, const std::string& options_json);

absl::StatusOr<std::unique_ptr<snapshots::snapshot>> open_memory(const memory_options& options);

}  // namespace toolhost::memory_backend
