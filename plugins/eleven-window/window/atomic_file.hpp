// Writing a file so that a crash leaves either the old content or the new, never half of it.
#pragma once

#include <filesystem>
#include <string_view>

#include <absl/status/status.h>

namespace toolhost::eleven {

// Writes `data` to a temporary file next to `path`, flushes it to disk, then renames it over
// `path` (and flushes the directory). `mode` is the new file's permission bits.
absl::Status write_file_atomically(const std::filesystem::path& path, std::string_view data, unsigned mode = 0644);

}  // namespace toolhost::eleven
