#include "toolhost/analysis/code_scan.hpp"

#include <algorithm>
#include <thread>

#include <absl/status/status.h>

namespace toolhost::analysis {
namespace {

// Work is handed out in pieces of about this size, each starting at a function start, so a
// thread that finishes early takes the next piece and no thread waits long for the last one.
constexpr uint64_t kPieceBytes = 256 * 1024;

struct piece {
  uint64_t address = 0;
  std::span<const uint8_t> bytes;
};

}  // namespace

std::optional<disasm::mode> decoding_mode(const image& img) {
  switch (img.arch()) {
    case architecture::x86_64: return disasm::mode::x86_64;
    case architecture::x86: return disasm::mode::x86_32;
    default: return std::nullopt;
  }
}

std::vector<disasm::address_range> mapped_ranges(const image& img) {
  std::vector<disasm::address_range> out;
  for (const section& s : img.sections()) {
    if (s.size == 0) continue;
    if (!out.empty() && s.address <= out.back().end) {
      out.back().end = std::max(out.back().end, s.end());
    } else {
      out.push_back({s.address, s.end()});
    }
  }
  return out;
}

absl::StatusOr<code_scan> scan_code(const image& img, std::span<const uint64_t> starts, unsigned threads,
                                    work_meter* meter, const std::atomic<bool>* cancel) {
  const auto mode = decoding_mode(img);
  if (!mode) {
    return absl::FailedPreconditionError(img.name() + " is " + img.machine() +
                                         " code, and only x86 and x86-64 are disassembled here");
  }
  const disasm::reference_scanner scanner(*mode, mapped_ranges(img));

  std::vector<piece> pieces;
  code_scan out;
  for (const section& s : img.sections()) {
    if (!s.executable) continue;
    const auto bytes = img.section_bytes(s);
    out.code_bytes += bytes.size();
    uint64_t at = 0;
    while (at < bytes.size()) {
      uint64_t cut = bytes.size();
      if (bytes.size() - at > kPieceBytes) {
        // The first function start past the piece's nominal end, where the sweep restarts anyway.
        auto it = std::lower_bound(starts.begin(), starts.end(), s.address + at + kPieceBytes);
        if (it != starts.end() && *it < s.address + bytes.size()) cut = *it - s.address;
      }
      pieces.push_back({s.address + at, bytes.subspan(at, cut - at)});
      at = cut;
    }
  }
  if (meter != nullptr) meter->total += out.code_bytes;

  std::vector<std::vector<disasm::code_reference>> found(pieces.size());
  std::vector<disasm::scan_stats> stats(pieces.size());
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < pieces.size(); i = next++) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return;
      stats[i] = scanner.scan(pieces[i].address, pieces[i].bytes, starts, found[i]);
      if (meter != nullptr) meter->done += pieces[i].bytes.size();
    }
  };
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(pieces.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (cancel != nullptr && cancel->load()) return absl::CancelledError("the analysis was cancelled");

  size_t total = 0;
  for (const auto& f : found) total += f.size();
  out.references.reserve(total);
  for (size_t i = 0; i < pieces.size(); ++i) {
    out.references.insert(out.references.end(), found[i].begin(), found[i].end());
    out.instructions += stats[i].instructions;
    out.undecodable += stats[i].undecodable;
  }
  // Sections are swept in address order and pieces in order within them, so the references
  // are sorted already unless sections overlap; keep the promise either way.
  if (!std::is_sorted(out.references.begin(), out.references.end(),
                      [](const auto& a, const auto& b) { return a.from < b.from; })) {
    std::stable_sort(out.references.begin(), out.references.end(),
                     [](const auto& a, const auto& b) { return a.from < b.from; });
  }
  return out;
}

}  // namespace toolhost::analysis
