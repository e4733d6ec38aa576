// Opens a dump file of any supported format (chosen by its first bytes).
#pragma once

#include <memory>
#include <string>

#include <absl/status/statusor.h>

#include <toolhost/snapshot/snapshot.hpp>

namespace toolhost::dump_backend {

absl::StatusOr<std::unique_ptr<snapshots::snapshot>> open_dump(const std::string& path);

}  // namespace toolhost::dump_backend
