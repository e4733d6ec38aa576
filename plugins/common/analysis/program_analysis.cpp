#include "toolhost/analysis/program_analysis.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <absl/status/status.h>

namespace toolhost::analysis {
namespace {

std::string pointer_label(const import_slot& i) {
  char address[24];
  std::snprintf(address, sizeof address, "%08llx", static_cast<unsigned long long>(i.slot));
  return "PTR_" + i.name + "_" + address;  // Ghidra's label for a pointer to an import
}

}  // namespace

std::string_view to_string(name_source s) {
  switch (s) {
    case name_source::default_name: return "default";
    case name_source::analysis: return "analysis";
    case name_source::imported: return "imported";
  }
  return "default";
}

std::string_view to_string(analysis_phase p) {
  switch (p) {
    case analysis_phase::queued: return "queued";
    case analysis_phase::sweeping: return "disassembling";
    case analysis_phase::functions: return "finding functions";
    case analysis_phase::strings: return "finding strings";
    case analysis_phase::indexing: return "indexing references and names";
    case analysis_phase::done: return "done";
  }
  return "queued";
}

absl::StatusOr<std::shared_ptr<const program_analysis>> program_analysis::run(image img,
                                                                              const analysis_options& options,
                                                                              analysis_progress* progress,
                                                                              const std::atomic<bool>* cancel) {
  std::shared_ptr<program_analysis> a(new program_analysis(std::move(img)));
  const auto set_phase = [progress](analysis_phase p) {
    if (progress != nullptr) progress->phase = p;
  };
  const unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const image& img_ref = a->img_;
  using clock = std::chrono::steady_clock;
  auto mark = clock::now();
  const auto lap = [&mark](double& into) {
    const auto now = clock::now();
    into = std::chrono::duration<double, std::milli>(now - mark).count();
    mark = now;
  };

  set_phase(analysis_phase::sweeping);
  std::vector<disasm::code_reference> refs;
  if (decoding_mode(img_ref)) {
    const std::vector<uint64_t> starts = known_function_starts(img_ref);
    auto scan = scan_code(img_ref, starts, threads, progress != nullptr ? &progress->sweep : nullptr, cancel);
    if (!scan.ok()) return scan.status();
    refs = std::move(scan->references);
    a->instructions_ = scan->instructions;
    a->undecodable_ = scan->undecodable;
  }

  lap(a->timings_.sweep_ms);
  set_phase(analysis_phase::functions);
  a->functions_ = function_table::discover(img_ref, refs);
  lap(a->timings_.functions_ms);
  if (cancel != nullptr && cancel->load()) return absl::CancelledError("the analysis was cancelled");

  // Strings need only the bytes and the index only the references: one thread each.
  set_phase(analysis_phase::strings);
  std::thread strings([&] { a->strings_ = find_strings(img_ref, options.min_string_length); });
  a->references_ = reference_index(std::move(refs));
  strings.join();
  lap(a->timings_.strings_and_index_ms);
  if (cancel != nullptr && cancel->load()) return absl::CancelledError("the analysis was cancelled");

  set_phase(analysis_phase::indexing);
  a->collect_names();
  lap(a->timings_.names_ms);
  set_phase(analysis_phase::done);
  return std::shared_ptr<const program_analysis>(std::move(a));
}

void program_analysis::collect_names() {
  for (const function& f : functions_.all()) {
    name_entry n;
    n.address = f.address;
    n.text = f.name;
    n.function = true;
    if (f.named_by_symbol || f.is_thunk()) {
      n.source = name_source::imported;
    } else if (f.from(from_entry)) {
      n.source = name_source::analysis;
    } else {
      n.source = name_source::default_name;
      n.dynamic = true;
    }
    names_.push_back(std::move(n));
  }
  for (const symbol& s : img_.symbols()) {
    if (img_.section_at(s.address) == nullptr) continue;
    const function* f = functions_.starting(s.address);
    if (f != nullptr && f->name == s.name) continue;
    name_entry n;
    n.address = s.address;
    n.text = s.name;
    n.function = s.kind == symbol_kind::function;
    n.primary = false;  // settled below
    names_.push_back(std::move(n));
  }
  for (const import_slot& i : img_.imports()) {
    if (img_.section_at(i.slot) == nullptr) continue;
    name_entry n;
    n.address = i.slot;
    n.text = pointer_label(i);
    n.source = name_source::analysis;
    n.dynamic = true;
    n.primary = false;
    names_.push_back(std::move(n));
  }
  // Per address: the function's name first, then symbols before made-up labels, then by text.
  std::stable_sort(names_.begin(), names_.end(), [](const name_entry& a, const name_entry& b) {
    if (a.address != b.address) return a.address < b.address;
    if (a.primary != b.primary) return a.primary;
    if (a.dynamic != b.dynamic) return !a.dynamic;
    return a.text < b.text;
  });
  for (size_t i = 0; i < names_.size(); ++i) names_[i].primary = i == 0 || names_[i - 1].address != names_[i].address;
  names_by_text_.resize(names_.size());
  for (uint32_t i = 0; i < names_by_text_.size(); ++i) names_by_text_[i] = i;
  std::sort(names_by_text_.begin(), names_by_text_.end(), [this](uint32_t a, uint32_t b) {
    return names_[a].text != names_[b].text ? names_[a].text < names_[b].text : a < b;
  });
}

const string_entry* program_analysis::string_at(uint64_t address) const noexcept {
  auto it = std::lower_bound(strings_.begin(), strings_.end(), address,
                             [](const string_entry& s, uint64_t a) { return s.address < a; });
  return it != strings_.end() && it->address == address ? &*it : nullptr;
}

const name_entry* program_analysis::name_at(uint64_t address) const noexcept {
  auto it = std::lower_bound(names_.begin(), names_.end(), address,
                             [](const name_entry& n, uint64_t a) { return n.address < a; });
  return it != names_.end() && it->address == address ? &*it : nullptr;
}

const name_entry* program_analysis::find_name(std::string_view text) const noexcept {
  auto it = std::lower_bound(names_by_text_.begin(), names_by_text_.end(), text,
                             [this](uint32_t i, std::string_view t) { return names_[i].text < t; });
  return it != names_by_text_.end() && names_[*it].text == text ? &names_[*it] : nullptr;
}

}  // namespace toolhost::analysis
