// ELF core files through libelf: Linux process cores as gdb's gcore writes them (memory by
// virtual address, every thread's registers from NT_PRSTATUS, mapped files from NT_FILE) and
// QEMU `dump-guest-memory` files (physical memory in PT_LOAD, vCPU registers from the QEMU
// notes, virtual addresses through the page walk with the current vCPU's CR3).
#pragma once

#include <memory>

#include <absl/status/statusor.h>

#include <toolhost/snapshot/snapshot.hpp>
#include "mapped_file.hpp"

namespace toolhost::dump_backend {

// True when `bytes` start like an ELF file.
bool looks_like_elf(std::span<const uint8_t> bytes);

absl::StatusOr<std::unique_ptr<snapshots::snapshot>> open_elf_core(std::unique_ptr<mapped_file> file);

}  // namespace toolhost::dump_backend
