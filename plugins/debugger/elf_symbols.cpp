#include "elf_symbols.hpp"

#include <algorithm>
#include <fstream>

namespace toolhost::debugger {

namespace {

class elf_source final : public symbol_source {
 public:
  elf_source(std::shared_ptr<const elf::elf_file> file, uint64_t low) : file_(std::move(file)), low_(low) {}

  std::string status() const override { return file_->stripped() ? "export symbols" : "symbols"; }
  std::string file() const override { return file_->name(); }

  std::optional<symbol_hit> find(std::string_view name) const override {
    const elf::symbol* s = file_->find_function(name);
    if (s == nullptr || s->address == 0) s = file_->find_symbol(name);
    if (s == nullptr || s->address == 0) return std::nullopt;
    return hit(*s);
  }

  std::optional<symbol_hit> nearest(uint64_t offset) const override {
    const uint64_t a = offset + low_;
    const elf::symbol* s = file_->function_at(a);
    if (s == nullptr) {
      // Data: the symbol whose extent holds the address.
      const auto& all = file_->symbols();
      auto it = std::upper_bound(all.begin(), all.end(), a,
                                 [](uint64_t x, const elf::symbol& sym) { return x < sym.address; });
      while (it != all.begin()) {
        --it;
        if (it->address == a || (it->size != 0 && a - it->address < it->size)) {
          s = &*it;
          break;
        }
        if (a - it->address > 0x10000) break;
      }
    }
    if (s == nullptr) {
      // The nearest symbol counts only inside its own section (not _init+0x30 for a PLT stub).
      const elf::symbol* near = file_->symbol_near(a);
      const elf::section* here = file_->section_at(a);
      if (near != nullptr && here != nullptr && file_->section_at(near->address) == here) s = near;
    }
    if (s == nullptr || s->address < low_) return std::nullopt;
    return hit(*s);
  }

  std::optional<symbol_hit> following(uint64_t offset) const override {
    const uint64_t a = offset + low_;
    const auto& fns = file_->functions();
    auto it =
        std::upper_bound(fns.begin(), fns.end(), a, [](uint64_t x, const elf::symbol& sym) { return x < sym.address; });
    if (it == fns.end()) return std::nullopt;
    return hit(*it);
  }

  std::optional<symbol_hit> function_at(uint64_t offset) const override {
    const elf::symbol* s = file_->function_at(offset + low_);
    if (s == nullptr || s->address < low_) return std::nullopt;
    return hit(*s);
  }

  void match(std::string_view pattern, const std::function<bool(const symbol_hit&)>& visit) const override {
    for (const auto& s : file_->symbols()) {
      if (s.address == 0 || s.address < low_ || !wildcard_match(pattern, s.name)) continue;
      if (!visit(hit(s))) return;
    }
  }

 private:
  symbol_hit hit(const elf::symbol& s) const {
    return {s.name, s.address - low_, s.size, s.kind == elf::symbol_kind::function};
  }

  std::shared_ptr<const elf::elf_file> file_;
  uint64_t low_;
};

bool is_elf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) ==
                                  "\x7f"
                                  "ELF";
}

}  // namespace

std::shared_ptr<const symbol_source> make_elf_source(std::shared_ptr<const elf::elf_file> file, uint64_t low) {
  return std::make_shared<elf_source>(std::move(file), low);
}

std::optional<module_symbols> elf_module_symbols(const module& m) {
  if (m.path.empty() || !is_elf_file(m.path)) return std::nullopt;
  module_symbols out;
  auto file = elf::elf_file::open(m.path);
  if (!file.ok()) {
    out.problem = std::string(file.status().message());
    return out;
  }
  auto shared = std::make_shared<const elf::elf_file>(std::move(*file));
  // The module's base is where its lowest loadable page landed.
  uint64_t low = UINT64_MAX;
  for (const auto& seg : shared->segments()) {
    if (seg.type == 1 /* PT_LOAD */) low = std::min<uint64_t>(low, seg.address & ~0xfffull);
  }
  if (low == UINT64_MAX) low = 0;
  out.sources.push_back(make_elf_source(shared, low));
  out.facts.push_back({"Image path", m.path});
  return out;
}

}  // namespace toolhost::debugger
