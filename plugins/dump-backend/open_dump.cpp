#include "open_dump.hpp"

#include <absl/strings/str_format.h>

#include "elf_core.hpp"
#include "mapped_file.hpp"
#include "windows_dump.hpp"

namespace toolhost::dump_backend {

absl::StatusOr<std::unique_ptr<snapshots::snapshot>> open_dump(const std::string& path) {
  absl::StatusOr<std::unique_ptr<mapped_file>> file = mapped_file::open(path);
  if (!file.ok()) return file.status();
  const auto bytes = (*file)->bytes();
  absl::StatusOr<std::unique_ptr<snapshots::snapshot>> snap;
  if (looks_like_elf(bytes)) {
    snap = open_elf_core(std::move(*file));
  } else if (looks_like_windows_dump(bytes)) {
    snap = open_windows_dump(std::move(*file));
  } else {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is neither an ELF core (gcore, QEMU dump-guest-memory) nor a 64-bit Windows crash dump (PAGEDU64)", path));
  }
  if (!snap.ok()) return absl::Status(snap.status().code(), absl::StrFormat("%s: %s", path, snap.status().message()));
  return snap;
}

}  // namespace toolhost::dump_backend
