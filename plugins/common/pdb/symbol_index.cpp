#include <algorithm>
#include <cctype>

#include <toolhost/pdb/pdb_file.hpp>
#include <toolhost/types/dt.hpp>

namespace toolhost::pdb {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

symbol_index::symbol_index(std::vector<symbol> by_rva, std::vector<std::unique_ptr<char[]>> names)
    : storage_(std::move(names)), by_rva_(std::move(by_rva)) {
  std::sort(by_rva_.begin(), by_rva_.end(),
            [](const symbol& a, const symbol& b) { return a.rva != b.rva ? a.rva < b.rva : a.name < b.name; });
  // The same name at the same place (a public and its procedure): one entry that knows more.
  size_t kept = 0;
  for (size_t i = 0; i < by_rva_.size(); ++i) {
    if (kept > 0 && by_rva_[kept - 1].rva == by_rva_[i].rva && by_rva_[kept - 1].name == by_rva_[i].name) {
      symbol& s = by_rva_[kept - 1];
      s.size = std::max(s.size, by_rva_[i].size);
      if (by_rva_[i].k == symbol::kind::function) s.k = symbol::kind::function;
      continue;
    }
    by_rva_[kept++] = by_rva_[i];
  }
  by_rva_.resize(kept);
  for (uint32_t i = 0; i < by_rva_.size(); ++i) {
    if (by_rva_[i].k == symbol::kind::function && by_rva_[i].size > 0) functions_.push_back(i);
  }
}

void symbol_index::build_names() const {
  std::call_once(names_once_, [this] {
    size_t bytes = 0;
    for (const auto& s : by_rva_) bytes += s.name.size();
    lower_storage_ = std::make_unique<char[]>(std::max<size_t>(bytes, 1));
    char* at = lower_storage_.get();
    lower_names_.reserve(by_rva_.size());
    by_name_.reserve(by_rva_.size());
    for (uint32_t i = 0; i < by_rva_.size(); ++i) {
      const std::string_view name = by_rva_[i].name;
      for (size_t c = 0; c < name.size(); ++c)
        at[c] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[c])));
      lower_names_.emplace_back(at, name.size());
      at += name.size();
      by_name_.push_back(i);
      exact_.emplace(name, i);
    }
    std::sort(by_name_.begin(), by_name_.end(), [this](uint32_t a, uint32_t b) {
      return lower_names_[a] != lower_names_[b] ? lower_names_[a] < lower_names_[b] : by_rva_[a].name < by_rva_[b].name;
    });
  });
}

const symbol* symbol_index::find(std::string_view name) const {
  build_names();
  if (auto it = exact_.find(name); it != exact_.end()) return &by_rva_[it->second];
  const std::string key = lower(name);
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), std::string_view(key),
                             [this](uint32_t i, std::string_view k) { return lower_names_[i] < k; });
  const symbol* folded = nullptr;
  for (; it != by_name_.end() && lower_names_[*it] == key; ++it) {
    if (by_rva_[*it].name == name) return &by_rva_[*it];
    if (folded == nullptr) folded = &by_rva_[*it];
  }
  return folded;
}

const symbol* symbol_index::function_at(uint32_t rva) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), rva,
                             [this](uint32_t r, uint32_t i) { return r < by_rva_[i].rva; });
  if (it == functions_.begin()) return nullptr;
  const symbol& s = by_rva_[*(it - 1)];
  return rva - s.rva < s.size ? &s : nullptr;
}

const symbol* symbol_index::nearest(uint32_t rva) const {
  if (const symbol* f = function_at(rva)) return f;
  auto it =
      std::upper_bound(by_rva_.begin(), by_rva_.end(), rva, [](uint32_t r, const symbol& s) { return r < s.rva; });
  if (it == by_rva_.begin()) return nullptr;
  --it;
  // Of several names at one address, the first function, else the first.
  const uint32_t at = it->rva;
  const symbol* best = &*it;
  for (auto j = it;; --j) {
    if (j->rva != at) break;
    if (j->k == symbol::kind::function || best->k != symbol::kind::function) best = &*j;
    if (j == by_rva_.begin()) break;
  }
  return best;
}

const symbol* symbol_index::following(uint32_t rva) const {
  auto it =
      std::upper_bound(by_rva_.begin(), by_rva_.end(), rva, [](uint32_t r, const symbol& s) { return r < s.rva; });
  return it == by_rva_.end() ? nullptr : &*it;
}

void symbol_index::match(std::string_view pattern, const std::function<bool(const symbol&)>& visit) const {
  build_names();
  const size_t wild = pattern.find_first_of("*?");
  const std::string prefix = lower(pattern.substr(0, wild));
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), std::string_view(prefix),
                             [this](uint32_t i, std::string_view k) { return lower_names_[i] < k; });
  for (; it != by_name_.end(); ++it) {
    if (lower_names_[*it].compare(0, prefix.size(), prefix) != 0) break;
    if (types::wildcard_match(pattern, by_rva_[*it].name) && !visit(by_rva_[*it])) return;
  }
}

}  // namespace toolhost::pdb
