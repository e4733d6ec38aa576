// Opening a recording: pick the reader by the file's content, return the interval model.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include <absl/status/statusor.h>

#include "trace_model.hpp"

namespace toolhost::gpu_profile {

// Lets a long read be watched and stopped. Both callbacks are optional; the readers call them
// every few tens of thousands of records or 64 KiB, on the reading thread.
struct read_control {
  std::function<bool()> cancelled;                              // true stops the read (Cancelled)
  std::function<void(uint64_t done, uint64_t total)> progress;  // bytes read of the file (XML, JSON)
};

// Each reader streams its file and fails with a sentence that names the file and the problem
// (malformed, truncated, or not the format at all).
absl::StatusOr<trace_model> read_xctrace_xml(const std::filesystem::path& file, const read_control& control = {});
absl::StatusOr<trace_model> read_chrome_json(const std::filesystem::path& file, const read_control& control = {});
// The same from an open, seekable stream; `name` is for messages.
absl::StatusOr<trace_model> read_xctrace_xml(std::FILE* in, const std::string& name, const read_control& control = {});
absl::StatusOr<trace_model> read_chrome_json(std::FILE* in, const std::string& name, const read_control& control = {});
absl::StatusOr<trace_model> read_nsys_sqlite(const std::filesystem::path& file, const read_control& control = {});

// Sniffs the first bytes: "SQLite format 3", '<' for XML, '{' or '[' for JSON.
absl::StatusOr<trace_model> read_trace(const std::filesystem::path& file, const read_control& control = {});

// The size of a seekable stream, leaving it at the start; 0 when it cannot seek.
uint64_t stream_size(std::FILE* in);

}  // namespace toolhost::gpu_profile
