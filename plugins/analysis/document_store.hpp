// The binaries this server has open ("documents", as REA calls them) and their analyses.
//
// open_binary reads a file, hashes it and starts its whole-program analysis on a thread of its
// own; the analysis is shared by every document with the same SHA-256 (opening the same bytes
// again, under any path, costs only the hash). Tools that need the analysis wait for it and
// report its progress; a cancelled wait leaves the analysis running for the next call. At most
// `max_documents` stay open: opening one more closes the one opened longest ago.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <absl/status/statusor.h>
#include <toolhost/analysis/image.hpp>
#include <toolhost/analysis/program_analysis.hpp>

namespace toolhost::analysis_server {

namespace an = toolhost::analysis;

struct progress_report {
  double done = 0;
  double total = -1;  // unknown
  std::string message;
};

// One analysis run on its own thread.
class analysis_job {
 public:
  analysis_job(an::image img, an::analysis_options options);
  ~analysis_job();  // stops the run (it checks between pieces of work) and joins the thread
  analysis_job(const analysis_job&) = delete;
  analysis_job& operator=(const analysis_job&) = delete;

  // Blocks until the analysis is done or `cancelled()` turns true (then Cancelled). Calls
  // `progress` when there is news, at most every 100 ms; reports only ever grow.
  absl::StatusOr<std::shared_ptr<const an::program_analysis>> wait(
      const std::function<bool()>& cancelled, const std::function<void(const progress_report&)>& progress);
  // The finished analysis, or nullptr while it runs or when it failed.
  std::shared_ptr<const an::program_analysis> finished() const;

 private:
  progress_report snapshot() const;

  an::analysis_progress progress_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable done_;
  bool finished_ = false;
  absl::Status status_;
  std::shared_ptr<const an::program_analysis> result_;
  std::thread thread_;
};

struct document {
  std::string name;  // what list_documents shows and the `document` argument selects
  std::string path;  // absolute
  std::string sha256;
  an::image img;  // readable at once; the analysis comes later
  std::shared_ptr<analysis_job> job;
};

struct store_options {
  size_t max_documents = 4;
  unsigned threads = 0;  // per analysis; 0: one per core
  uint64_t max_file_bytes = 2ULL << 30;
};

class document_store {
 public:
  explicit document_store(store_options options) : options_(options) {}

  // Opens (or reopens) the file at `path` and starts its analysis unless one with its SHA-256
  // exists. Errors are sentences naming the file and the problem.
  absl::StatusOr<std::shared_ptr<document>> open(const std::string& path);
  // By name; an empty name means the document opened last. NotFound says what is open.
  absl::StatusOr<std::shared_ptr<document>> find(std::string_view name) const;
  std::vector<std::string> names() const;
  // Drops every document (their analyses stop once no call holds them).
  void close_all();

 private:
  store_options options_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<document>> documents_;  // opened longest ago first
};

// The image a file's bytes describe: ELF through toolhost::elf, PE through toolhost::pe.
// `name` is for messages.
absl::StatusOr<an::image> load_image(std::string bytes, const std::string& name);

}  // namespace toolhost::analysis_server
