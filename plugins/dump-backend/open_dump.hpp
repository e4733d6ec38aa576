// Opens a dump file of any supported format (chosen by its first bytes).
#pragma once

#include <memory>
#include <string>

#include <absl/status/statusor.h>

#include "snapshot.hpp"

namespace toolhost::dump_backend {

absl::StatusOr<std::unique_ptr<snapshot>> open_dump(const std::string& path);

}  // namespace toolhost::dump_backend
