#include "document_store.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <absl/status/status.h>
#include <toolhost/elf/elf_file.hpp>
#include <toolhost/pe/image.hpp>

#include "sha256.hpp"

namespace toolhost::analysis_server {
namespace {

std::string size_text(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ULL << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ULL << 30));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1ULL << 20));
  return buf;
}

// "~/x" as the home folder's x: answers show paths that way when the privacy filter is on.
std::filesystem::path expand_home(const std::string& path) {
  if (path == "~" || path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    if (home != nullptr && *home != '\0') return std::filesystem::path(home) / path.substr(path.size() > 1 ? 2 : 1);
  }
  return path;
}

absl::StatusOr<std::string> read_file(const std::filesystem::path& path, uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::NotFoundError("There is no file at " + path.string() + ".");
    return absl::PermissionDeniedError("Cannot open " + path.string() + ": " + std::strerror(errno) + ".");
  }
  if (S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(path.string() + " is a folder, not a binary.");
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(path.string() + " is not a regular file.");
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::InvalidArgumentError(path.string() + " is " + size_text(st.st_size) +
                                      "; this server opens files up to " + size_text(max_bytes) +
                                      " (the max_file_mb setting).");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError("Cannot read " + path.string() + ": " + std::strerror(errno) + ".");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(in.gcount()) != bytes.size()) {
    return absl::DataLossError("Could not read all of " + path.string() + " (it changed while it was read?).");
  }
  return bytes;
}

std::string first_bytes(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 4; ++i) {
    char b[4];
    std::snprintf(b, sizeof b, "%s%02x", i == 0 ? "" : " ", static_cast<unsigned char>(bytes[i]));
    out += b;
  }
  return out.empty() ? "nothing: it is empty" : out;
}

}  // namespace

absl::StatusOr<an::image> load_image(std::string bytes, const std::string& name) {
  if (bytes.size() >= 4 && bytes.compare(0, 4,
                                         "\x7f"
                                         "ELF") == 0) {
    auto elf = elf::elf_file::parse(std::move(bytes), name);
    if (!elf.ok()) return absl::InvalidArgumentError("Cannot read " + std::string(elf.status().message()) + ".");
    if (auto missing = an::elf_truncation(*elf)) return absl::DataLossError(name + " is cut short: " + *missing + ".");
    an::image img = an::image_from_elf(std::make_shared<const elf::elf_file>(std::move(*elf)));
    if (img.kind() == "relocatable") {
      return absl::InvalidArgumentError(name +
                                        " is a relocatable object: its sections get addresses only when it is "
                                        "linked, so open the program or library it goes into.");
    }
    if (img.sections().empty() && img.segments().empty()) {
      return absl::InvalidArgumentError(name +
                                        " is an ELF file with nothing mapped: no sections or segments to analyse.");
    }
    return img;
  }
  if (bytes.size() >= 2 && bytes.compare(0, 2, "MZ") == 0) {
    auto pe = pe::image::from_bytes(std::move(bytes), name);
    if (!pe.ok()) return absl::InvalidArgumentError("Cannot read " + std::string(pe.status().message()) + ".");
    if (auto missing = an::pe_truncation(*pe)) return absl::DataLossError(name + " is cut short: " + *missing + ".");
    return an::image_from_pe(std::make_shared<const pe::image>(std::move(*pe)));
  }
  return absl::InvalidArgumentError(name + " is neither an ELF nor a PE file (it starts with " + first_bytes(bytes) +
                                    ").");
}

analysis_job::analysis_job(an::image img, an::analysis_options options) {
  thread_ = std::thread([this, img = std::move(img), options]() mutable {
    auto result = an::program_analysis::run(std::move(img), options, &progress_, &stop_);
    std::lock_guard lock(mutex_);
    finished_ = true;
    if (result.ok())
      result_ = std::move(*result);
    else
      status_ = result.status();
    done_.notify_all();
  });
}

analysis_job::~analysis_job() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

progress_report analysis_job::snapshot() const {
  // Units: the code bytes the sweep decodes, then one for each phase after it.
  constexpr int kLaterPhases = 3;
  const an::analysis_phase phase = progress_.phase.load();
  const uint64_t total = progress_.sweep.total.load();
  const uint64_t done = progress_.sweep.done.load();
  progress_report r;
  r.total = static_cast<double>(total + kLaterPhases);
  int later = 0;
  switch (phase) {
    case an::analysis_phase::strings: later = 1; break;
    case an::analysis_phase::indexing: later = 2; break;
    case an::analysis_phase::done: later = 3; break;
    default: break;
  }
  r.done = static_cast<double>(phase >= an::analysis_phase::functions ? total : done) + later;
  char detail[96] = "";
  if (phase == an::analysis_phase::sweeping && total != 0) {
    std::snprintf(detail, sizeof detail, " %.1f of %.1f MiB of code", static_cast<double>(done) / (1 << 20),
                  static_cast<double>(total) / (1 << 20));
  }
  r.message = "analysis: " + std::string(an::to_string(phase)) + detail;
  return r;
}

absl::StatusOr<std::shared_ptr<const an::program_analysis>> analysis_job::wait(
    const std::function<bool()>& cancelled, const std::function<void(const progress_report&)>& progress) {
  double reported = -1;
  std::unique_lock lock(mutex_);
  while (!finished_) {
    done_.wait_for(lock, std::chrono::milliseconds(100));
    if (finished_) break;
    if (cancelled()) return absl::CancelledError("the call was cancelled; the analysis goes on for the next one");
    lock.unlock();
    const progress_report r = snapshot();
    if (r.done > reported) {
      progress(r);
      reported = r.done;
    }
    lock.lock();
  }
  if (!status_.ok()) return status_;
  return result_;
}

std::shared_ptr<const an::program_analysis> analysis_job::finished() const {
  std::lock_guard lock(mutex_);
  return result_;
}

absl::StatusOr<std::shared_ptr<document>> document_store::open(const std::string& requested) {
  if (requested.empty()) return absl::InvalidArgumentError("Give the path of the binary to open.");
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::absolute(expand_home(requested), ec).lexically_normal();
  auto bytes = read_file(path, options_.max_file_bytes);
  if (!bytes.ok()) return bytes.status();
  const std::string sha = sha256_hex(*bytes);
  auto img = load_image(std::move(*bytes), path.string());
  if (!img.ok()) return img.status();

  std::vector<std::shared_ptr<document>> closed;  // released after the lock: a running analysis joins its thread
  std::lock_guard lock(mutex_);
  // The same bytes again: reuse their analysis, whatever path they were opened under.
  std::shared_ptr<analysis_job> job;
  for (const auto& d : documents_) {
    if (d->sha256 == sha) job = d->job;
  }
  auto doc = std::make_shared<document>();
  doc->path = path.string();
  doc->sha256 = sha;
  doc->img = *img;
  if (job == nullptr) {
    an::analysis_options options;
    options.threads = options_.threads;
    job = std::make_shared<analysis_job>(std::move(*img), options);
  }
  doc->job = std::move(job);
  // Reopening a path replaces its document; another file with the same file name is known by
  // its whole path.
  for (auto it = documents_.begin(); it != documents_.end();) {
    if ((*it)->path == doc->path) {
      closed.push_back(*it);
      it = documents_.erase(it);
    } else {
      ++it;
    }
  }
  doc->name = path.filename().string();
  for (const auto& d : documents_) {
    if (d->name == doc->name) doc->name = doc->path;
  }
  documents_.push_back(doc);
  while (documents_.size() > std::max<size_t>(1, options_.max_documents)) {
    closed.push_back(documents_.front());
    documents_.erase(documents_.begin());
  }
  return doc;
}

absl::StatusOr<std::shared_ptr<document>> document_store::find(std::string_view name) const {
  std::lock_guard lock(mutex_);
  if (documents_.empty())
    return absl::FailedPreconditionError("No binary is open: call open_binary with its path first.");
  if (name.empty()) return documents_.back();
  for (auto it = documents_.rbegin(); it != documents_.rend(); ++it) {
    if ((*it)->name == name || (*it)->path == name) return *it;
  }
  std::string open;
  for (const auto& d : documents_) open += (open.empty() ? "" : ", ") + d->name;
  return absl::NotFoundError("No document is named \"" + std::string(name) + "\"; open are: " + open + ".");
}

std::vector<std::string> document_store::names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& d : documents_) out.push_back(d->name);
  return out;
}

void document_store::close_all() {
  std::vector<std::shared_ptr<document>> gone;
  {
    std::lock_guard lock(mutex_);
    gone.swap(documents_);
  }
}

}  // namespace toolhost::analysis_server
