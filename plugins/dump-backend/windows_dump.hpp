// A Windows kernel crash dump (DUMP_HEADER64) as a snapshot: physical memory from the dump,
// virtual memory through the page walk from DirectoryTableBase, the context record as the
// registers, header facts as hints.
#pragma once

#include <memory>

#include <absl/status/statusor.h>

#include <toolhost/snapshot/snapshot.hpp>
#include "mapped_file.hpp"

namespace toolhost::dump_backend {

bool looks_like_windows_dump(std::span<const uint8_t> bytes);

absl::StatusOr<std::unique_ptr<snapshots::snapshot>> open_windows_dump(std::unique_ptr<mapped_file> file);

}  // namespace toolhost::dump_backend
