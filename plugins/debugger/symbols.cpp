#include "symbols.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <toolhost/types/dt.hpp>

namespace toolhost::debugger {

namespace {

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// A nearest symbol further away than this says nothing useful: the module offset is shown.
constexpr uint64_t kNearLimit = 0x100000;

}  // namespace

std::string module_name_of(std::string_view file_name) {
  if (const auto slash = file_name.find_last_of("/\\"); slash != std::string_view::npos) {
    file_name = file_name.substr(slash + 1);
  }
  std::string name(file_name);
  if (const auto so = name.find(".so"); so != std::string::npos && so > 0) {
    name.resize(so);
  } else if (const auto dot = name.rfind('.'); dot != std::string::npos && dot > 0) {
    name.resize(dot);
  }
  // The Windows kernel goes by "nt" whichever image the loader picked.
  const std::string l = lower_case(name);
  if (l == "ntoskrnl" || l == "ntkrnlmp" || l == "ntkrnlpa" || l == "ntkrpamp") return "nt";
  for (char& c : name) {
    if (c == '-' || c == '.' || c == '+') c = '_';
  }
  return name;
}

bool wildcard_match(std::string_view pattern, std::string_view text) { return types::wildcard_match(pattern, text); }

std::string lower_case(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void symbol_table::set_modules(const std::vector<module_info>& list) {
  std::vector<module> next;
  for (const auto& m : list) {
    module mod;
    mod.name = module_name_of(m.name.empty() ? m.path : m.name);
    mod.path = m.path;
    mod.base = m.base;
    mod.size = m.size;
    auto old = std::find_if(modules_.begin(), modules_.end(),
                            [&](const module& o) { return o.path == m.path && o.base == m.base && o.size == m.size; });
    if (old != modules_.end()) {
      mod.state = old->state;
      mod.symbols = std::move(old->symbols);
    }
    // Duplicate names (two "libfoo"s) keep the first; later ones get their base appended.
    if (std::any_of(next.begin(), next.end(), [&](const module& o) { return o.name == mod.name; })) {
      char suffix[24];
      std::snprintf(suffix, sizeof(suffix), "_%llx", static_cast<unsigned long long>(mod.base));
      mod.name += suffix;
    }
    next.push_back(std::move(mod));
  }
  modules_ = std::move(next);
}

const module& symbol_table::ensure_loaded(const module& m) const {
  if (m.state == symbol_state::deferred) {
    m.state = symbol_state::loaded;  // first, so that a loader that looks symbols up cannot recurse
    if (loader_) m.symbols = loader_(m);
  }
  return m;
}

size_t symbol_table::unload(std::string_view pattern) {
  size_t n = 0;
  for (auto& m : modules_) {
    if (!wildcard_match(pattern, m.name)) continue;
    m.state = symbol_state::deferred;
    m.symbols = {};
    ++n;
  }
  return n;
}

const module* symbol_table::module_at(uint64_t address) const {
  for (const auto& m : modules_) {
    if (m.contains(address)) return &m;
  }
  return nullptr;
}

const module* symbol_table::find_module(std::string_view name) const {
  const std::string want = lower_case(name);
  for (const auto& m : modules_) {
    if (lower_case(m.name) == want) return &m;
  }
  return nullptr;
}

absl::StatusOr<uint64_t> symbol_table::resolve(std::string_view name) const {
  const auto bang = name.find('!');
  if (bang != std::string_view::npos) {
    const module* m = find_module(name.substr(0, bang));
    if (m == nullptr)
      return absl::NotFoundError("no module named '" + std::string(name.substr(0, bang)) +
                                 "' is loaded (lm lists them)");
    ensure_loaded(*m);
    if (m->symbols.sources.empty()) {
      return absl::NotFoundError("module " + m->name + " has no symbols" +
                                 (m->symbols.problem.empty() ? "" : ": " + m->symbols.problem));
    }
    const std::string_view symbol = name.substr(bang + 1);
    for (const auto& source : m->symbols.sources) {
      if (auto hit = source->find(symbol)) return m->base + hit->offset;
    }
    return absl::NotFoundError("no symbol '" + std::string(symbol) + "' in " + m->name);
  }
  // Loaded modules first (cheap), then each deferred one in turn, as WinDbg does.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& m : modules_) {
      if ((m.state == symbol_state::loaded) != (pass == 0)) continue;
      ensure_loaded(m);
      for (const auto& source : m.symbols.sources) {
        if (auto hit = source->find(name)) return m.base + hit->offset;
      }
    }
  }
  if (const module* m = find_module(name)) return m->base;
  return absl::NotFoundError(modules_.empty() ? "no modules are known yet"
                                              : "no module has a symbol '" + std::string(name) + "'");
}

std::string symbol_table::describe(uint64_t address) const { return describe(address, address); }

std::string symbol_table::describe(uint64_t address, uint64_t name_at) const {
  const module* m = module_at(name_at);
  if (m == nullptr || !m->contains(address)) {
    m = module_at(address);
    name_at = address;
  }
  if (m == nullptr) return "";
  ensure_loaded(*m);
  const uint64_t offset = address - m->base;
  const uint64_t name_offset = name_at - m->base;
  // Of all sources, the closest name wins (a PDB knows private functions exports do not).
  std::optional<symbol_hit> best;
  for (const auto& source : m->symbols.sources) {
    auto hit = source->nearest(name_offset);
    if (hit && (!best || hit->offset > best->offset)) best = std::move(hit);
  }
  if (best && offset >= best->offset && offset - best->offset < kNearLimit) {
    const uint64_t off = offset - best->offset;
    return m->name + "!" + best->name + (off != 0 ? "+" + hex(off) : "");
  }
  return m->name + "+" + hex(offset);
}

std::optional<source_position> symbol_table::line_at(uint64_t address) const {
  const module* m = module_at(address);
  if (m == nullptr) return std::nullopt;
  ensure_loaded(*m);
  for (const auto& source : m->symbols.sources) {
    if (auto line = source->line_at(address - m->base)) return line;
  }
  return std::nullopt;
}

std::optional<std::pair<uint64_t, uint64_t>> symbol_table::function_at(uint64_t address) const {
  const module* m = module_at(address);
  if (m == nullptr) return std::nullopt;
  ensure_loaded(*m);
  for (const auto& source : m->symbols.sources) {
    if (auto hit = source->function_at(address - m->base)) return std::make_pair(m->base + hit->offset, hit->size);
  }
  return std::nullopt;
}

std::vector<symbol_match> symbol_table::match(std::string_view module_pattern, std::string_view pattern,
                                              size_t limit) const {
  std::vector<symbol_match> out;
  for (const auto& m : modules_) {
    if (out.size() >= limit) break;
    if (!wildcard_match(module_pattern, m.name)) continue;
    ensure_loaded(m);
    // A name without wildcards is a lookup, not a scan.
    if (pattern.find_first_of("*?") == std::string_view::npos) {
      for (const auto& source : m.symbols.sources) {
        if (auto hit = source->find(pattern)) {
          out.push_back({m.name + "!" + hit->name, m.base + hit->offset, hit->size});
          break;
        }
      }
      continue;
    }
    // One source's answer per module: the best (a PDB's publics include the exports).
    for (const auto& source : m.symbols.sources) {
      const size_t before = out.size();
      source->match(pattern, [&](const symbol_hit& hit) {
        out.push_back({m.name + "!" + hit.name, m.base + hit.offset, hit.size});
        return out.size() < limit;
      });
      if (out.size() > before) break;
    }
  }
  return out;
}

std::pair<std::optional<symbol_match>, std::optional<symbol_match>> symbol_table::neighbours(uint64_t address) const {
  const module* m = module_at(address);
  if (m == nullptr) return {};
  ensure_loaded(*m);
  const uint64_t offset = address - m->base;
  std::optional<symbol_hit> below, above;
  for (const auto& source : m->symbols.sources) {
    auto b = source->nearest(offset);
    if (b && (!below || b->offset > below->offset)) below = std::move(b);
    auto a = source->following(offset);
    if (a && (!above || a->offset < above->offset)) above = std::move(a);
  }
  auto as_match = [&](const std::optional<symbol_hit>& h) -> std::optional<symbol_match> {
    if (!h) return std::nullopt;
    return symbol_match{m->name + "!" + h->name, m->base + h->offset, h->size};
  };
  return {as_match(below), as_match(above)};
}

}  // namespace toolhost::debugger
