// Expanding a compressed symbol-store file (".pd_", ".ex_": a one-file CAB) with libmspack.
#pragma once

#include <string>

#include <absl/status/status.h>

namespace toolhost::symbols {

// Writes the cabinet's first file to `output`. Errors name `cabinet`.
absl::Status expand_cabinet(const std::string& cabinet, const std::string& output);

}  // namespace toolhost::symbols
