// Opening a recording: pick the reader by the file's content, return the interval model.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include <absl/status/statusor.h>

#include "trace_model.hpp"

namespace toolhost::gpu_profile {

// Each reader streams its file and fails with a sentence that names the file and the problem
// (malformed, truncated, or not the format at all).
absl::StatusOr<trace_model> read_xctrace_xml(const std::filesystem::path& file);
absl::StatusOr<trace_model> read_chrome_json(const std::filesystem::path& file);
// The same from an open stream (seekable, for the JSON reader's size); `name` is for messages.
absl::StatusOr<trace_model> read_xctrace_xml(std::FILE* in, const std::string& name);
absl::StatusOr<trace_model> read_chrome_json(std::FILE* in, const std::string& name);
absl::StatusOr<trace_model> read_nsys_sqlite(const std::filesystem::path& file);

// Sniffs the first bytes: "SQLite format 3", '<' for XML, '{' or '[' for JSON.
absl::StatusOr<trace_model> read_trace(const std::filesystem::path& file);

}  // namespace toolhost::gpu_profile
