// toolhost::analysis: a whole-program analysis of one image, done once and then only read:
// every function, every reference the code makes, every string, every name.
//
//   toolhost::analysis::analysis_progress progress;
//   auto done = toolhost::analysis::program_analysis::run(std::move(img), {}, &progress);
//   const auto* f = (*done)->functions().named("main");
//   auto [first, last] = (*done)->references().to(f->address);  // who calls or jumps there
//
// A finished analysis is immutable and shared between threads through shared_ptr<const ...>.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

#include "toolhost/analysis/code_scan.hpp"
#include "toolhost/analysis/functions.hpp"
#include "toolhost/analysis/image.hpp"
#include "toolhost/analysis/references.hpp"
#include "toolhost/analysis/strings.hpp"

namespace toolhost::analysis {

// Where a name comes from, in Ghidra's words (REA's list_names reports them).
enum class name_source : uint8_t { default_name, analysis, imported };
std::string_view to_string(name_source s);  // "default", "analysis", "imported"

struct name_entry {
  uint64_t address = 0;
  std::string text;
  name_source source = name_source::imported;
  bool function = false;  // the name of a function (else a label)
  bool primary = true;    // the name shown for the address; aliases are not primary
  bool dynamic = false;   // made up by the analysis (FUN_..., PTR_...), not in the file
};

enum class analysis_phase : int { queued, sweeping, functions, strings, indexing, done };
std::string_view to_string(analysis_phase p);

struct analysis_progress {
  std::atomic<analysis_phase> phase{analysis_phase::queued};
  work_meter sweep;  // code bytes decoded of the total
};

// How long each phase took, for benchmarks and logs.
struct analysis_timings {
  double sweep_ms = 0, functions_ms = 0, strings_and_index_ms = 0, names_ms = 0;
};

struct analysis_options {
  unsigned threads = 0;  // 0: one per core
  size_t min_string_length = kMinimumStringLength;
};

class program_analysis {
 public:
  static absl::StatusOr<std::shared_ptr<const program_analysis>> run(image img, const analysis_options& options = {},
                                                                     analysis_progress* progress = nullptr,
                                                                     const std::atomic<bool>* cancel = nullptr);

  const image& img() const noexcept { return img_; }
  const function_table& functions() const noexcept { return functions_; }
  const reference_index& references() const noexcept { return references_; }
  const std::vector<string_entry>& strings() const noexcept { return strings_; }
  const std::vector<name_entry>& names() const noexcept { return names_; }  // sorted by address
  uint64_t instructions() const noexcept { return instructions_; }
  uint64_t undecodable_bytes() const noexcept { return undecodable_; }
  const analysis_timings& timings() const noexcept { return timings_; }

  const string_entry* string_at(uint64_t address) const noexcept;  // a string starting there
  // The primary name at `address`: a function's, else a symbol's or label's; nullptr if none.
  const name_entry* name_at(uint64_t address) const noexcept;
  // The first name entry with this exact text (lowest address).
  const name_entry* find_name(std::string_view text) const noexcept;

 private:
  explicit program_analysis(image img) : img_(std::move(img)) {}
  void collect_names();

  image img_;
  function_table functions_;
  reference_index references_;
  std::vector<string_entry> strings_;
  std::vector<name_entry> names_;
  std::vector<uint32_t> names_by_text_;
  uint64_t instructions_ = 0;
  uint64_t undecodable_ = 0;
  analysis_timings timings_;
};

}  // namespace toolhost::analysis
