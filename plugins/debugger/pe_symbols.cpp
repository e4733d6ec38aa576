#include "pe_symbols.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include <absl/strings/str_format.h>

namespace toolhost::debugger {

namespace {

class export_source final : public symbol_source {
 public:
  export_source(std::vector<symbol_hit> by_offset, std::vector<pe::runtime_function> functions, std::string file)
      : by_offset_(std::move(by_offset)), functions_(std::move(functions)), file_(std::move(file)) {
    for (size_t i = 0; i < by_offset_.size(); ++i) {
      by_name_.emplace(by_offset_[i].name, i);
      by_lower_name_.emplace(lower_case(by_offset_[i].name), i);
    }
  }

  std::string status() const override { return "export symbols"; }
  std::string file() const override { return file_; }

  std::optional<symbol_hit> find(std::string_view name) const override {
    if (auto it = by_name_.find(std::string(name)); it != by_name_.end()) return by_offset_[it->second];
    if (auto it = by_lower_name_.find(lower_case(name)); it != by_lower_name_.end()) return by_offset_[it->second];
    return std::nullopt;
  }

  std::optional<symbol_hit> nearest(uint64_t offset) const override {
    auto it = std::upper_bound(by_offset_.begin(), by_offset_.end(), offset,
                               [](uint64_t o, const symbol_hit& h) { return o < h.offset; });
    if (it == by_offset_.begin()) return std::nullopt;
    return *(it - 1);
  }

  std::optional<symbol_hit> following(uint64_t offset) const override {
    auto it = std::upper_bound(by_offset_.begin(), by_offset_.end(), offset,
                               [](uint64_t o, const symbol_hit& h) { return o < h.offset; });
    if (it == by_offset_.end()) return std::nullopt;
    return *it;
  }

  std::optional<symbol_hit> function_at(uint64_t offset) const override {
    auto it = std::upper_bound(functions_.begin(), functions_.end(), offset,
                               [](uint64_t o, const pe::runtime_function& f) { return o < f.begin; });
    if (it == functions_.begin()) return std::nullopt;
    --it;
    if (offset >= it->end) return std::nullopt;
    symbol_hit h;
    h.offset = it->begin;
    h.size = it->end - it->begin;
    h.function = true;
    if (auto named = nearest(it->begin); named && named->offset == it->begin) h.name = named->name;
    return h;
  }

  void match(std::string_view pattern, const std::function<bool(const symbol_hit&)>& visit) const override {
    for (const auto& h : by_offset_) {
      if (wildcard_match(pattern, h.name) && !visit(h)) return;
    }
  }

 private:
  std::vector<symbol_hit> by_offset_;
  std::vector<pe::runtime_function> functions_;  // sorted by begin
  std::string file_;
  std::unordered_map<std::string, size_t> by_name_, by_lower_name_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const symbol_source>> make_export_source(const pe::image& image, std::string file) {
  auto table = image.exports();
  if (!table.ok()) return table.status();
  if (table->entries.empty()) return std::shared_ptr<const symbol_source>();
  std::vector<symbol_hit> hits;
  for (const auto& e : table->entries) {
    if (e.rva == 0 || e.name.empty()) continue;  // forwarders and ordinal-only exports name no address here
    const pe::section* s = image.section_at(e.rva);
    hits.push_back({e.name, e.rva, 0, s != nullptr && s->executable()});
  }
  std::sort(hits.begin(), hits.end(), [](const symbol_hit& a, const symbol_hit& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.name < b.name;
  });
  auto functions = image.runtime_functions();
  return std::shared_ptr<const symbol_source>(std::make_shared<export_source>(
      std::move(hits), functions.ok() ? std::move(*functions) : std::vector<pe::runtime_function>{}, std::move(file)));
}

std::vector<std::pair<std::string, std::string>> pe_facts(const pe::image& image, const std::string& path) {
  std::vector<std::pair<std::string, std::string>> facts;
  const auto& h = image.header();
  std::string name = path.substr(path.find_last_of("\\/") + 1);
  if (auto table = image.exports(); table.ok() && !table->dll_name.empty()) name = table->dll_name;
  facts.push_back({"Image path", path});
  facts.push_back({"Image name", name});
  bool repro = false;
  if (auto entries = image.debug_entries(); entries.ok()) {
    repro = std::any_of(entries->begin(), entries->end(), [](const pe::debug_entry& e) { return e.type == 16; });
  }
  if (repro) facts.push_back({"", "Image was built with /Brepro flag."});
  facts.push_back(
      {"Timestamp", absl::StrFormat("%08X%s", h.timestamp,
                                    repro ? " (This is a reproducible build file hash, not a timestamp)" : "")});
  facts.push_back({"CheckSum", absl::StrFormat("%08X", h.checksum)});
  facts.push_back({"ImageSize", absl::StrFormat("%08X", h.size_of_image)});
  if (auto cv = image.codeview(); cv.ok() && cv->has_value()) {
    facts.push_back({"PDB", (*cv)->pdb_path});
    facts.push_back({"PDB GUID", (*cv)->guid_text()});
    facts.push_back({"PDB age", absl::StrFormat("%u", (*cv)->age)});
  }
  return facts;
}

}  // namespace toolhost::debugger
