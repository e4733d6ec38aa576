#include "symbols.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace toolhost::debugger {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

std::string module_name_of(std::string_view file_name) {
  if (const auto slash = file_name.rfind('/'); slash != std::string_view::npos) file_name = file_name.substr(slash + 1);
  std::string name(file_name);
  if (const auto so = name.find(".so"); so != std::string::npos && so > 0) {
    name.resize(so);
  } else if (const auto dot = name.rfind('.'); dot != std::string::npos && dot > 0) {
    name.resize(dot);
  }
  for (char& c : name) {
    if (c == '-' || c == '.' || c == '+') c = '_';
  }
  return name;
}

bool wildcard_match(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || std::tolower(static_cast<unsigned char>(pattern[p])) ==
                                                       std::tolower(static_cast<unsigned char>(text[t])))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string source_text(const dwarf::source_line& line) {
  return "[" + line.file + " @ " + std::to_string(line.line) + "]";
}

void symbol_table::set_modules(const std::vector<module_info>& list,
                               const std::function<std::optional<std::string>(const module_info&)>& read_image) {
  std::vector<module> next;
  for (const auto& m : list) {
    module mod;
    mod.name = module_name_of(m.name.empty() ? m.path : m.name);
    mod.path = m.path;
    mod.base = m.base;
    mod.size = m.size;
    auto old = std::find_if(modules_.begin(), modules_.end(),
                            [&](const module& o) { return o.path == m.path && o.base == m.base; });
    if (old != modules_.end()) {
      mod.elf = old->elf;
      mod.bias = old->bias;
      mod.symbol_problem = old->symbol_problem;
      mod.debug = old->debug;
      mod.unwinder = old->unwinder;
    } else if (!m.path.empty() && m.path.find('/') == std::string::npos && read_image) {
      // A module with no file (the vDSO): its image comes from the target's memory.
      if (auto image = read_image(m)) {
        if (mod.size == 0) mod.size = image->size();
        auto debug = dwarf::module_debug::open_image(m.path, std::move(*image), m.base);
        if (debug.ok()) mod.debug = std::move(*debug);
      }
      if (!mod.debug) mod.symbol_problem = "the target gives no file for it and its image is not readable";
    } else if (!m.path.empty()) {
      auto file = elf::elf_file::open(m.path);
      if (file.ok()) {
        mod.elf = std::make_shared<const elf::elf_file>(std::move(*file));
        // The module's base is where its lowest loadable page landed.
        uint64_t low = UINT64_MAX;
        for (const auto& seg : mod.elf->segments()) {
          if (seg.type == 1 /* PT_LOAD */) low = std::min<uint64_t>(low, seg.address & ~0xfffull);
        }
        mod.bias = low == UINT64_MAX ? m.base : m.base - low;
        if (auto debug = dwarf::module_debug::open(m.path, mod.bias, paths_); debug.ok()) mod.debug = std::move(*debug);
      } else {
        mod.symbol_problem = std::string(file.status().message());
      }
    } else {
      mod.symbol_problem = "the target gives no file for it";
    }
    if (mod.debug && !mod.unwinder) mod.unwinder = std::make_shared<cfi_unwinder>(*mod.debug);
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

const module* symbol_table::module_at(uint64_t address) const {
  for (const auto& m : modules_) {
    if (address >= m.base && address - m.base < std::max<uint64_t>(m.size, 1)) return &m;
  }
  return nullptr;
}

const module* symbol_table::find_module(std::string_view name) const {
  const std::string want = lower(name);
  for (const auto& m : modules_) {
    if (lower(m.name) == want) return &m;
  }
  return nullptr;
}

absl::StatusOr<uint64_t> symbol_table::resolve(std::string_view name) const {
  const auto bang = name.find('!');
  if (bang != std::string_view::npos) {
    const module* m = find_module(name.substr(0, bang));
    if (m == nullptr) return absl::NotFoundError("no module named '" + std::string(name.substr(0, bang)) + "' is loaded (lm lists them)");
    if (!m->elf && !m->debug) return absl::NotFoundError("module " + m->name + " has no symbols: " + m->symbol_problem);
    const std::string_view symbol = name.substr(bang + 1);
    const elf::symbol* s = m->elf ? m->elf->find_function(symbol) : nullptr;
    if (s == nullptr && m->elf) s = m->elf->find_symbol(symbol);
    if (s != nullptr) return s->address + m->bias;
    // Names only the full symbol table or the separate debug file has (local functions).
    if (m->debug) {
      if (auto d = m->debug->find_symbol(std::string(symbol))) return d->address;
    }
    return absl::NotFoundError("no symbol '" + std::string(symbol) + "' in " + m->name);
  }
  for (const auto& m : modules_) {
    if (!m.elf) continue;
    const elf::symbol* s = m.elf->find_function(name);
    if (s == nullptr) s = m.elf->find_symbol(name);
    if (s != nullptr && s->address != 0) return s->address + m.bias;
  }
  for (const auto& m : modules_) {
    if (!m.debug) continue;
    if (auto d = m.debug->find_symbol(std::string(name))) return d->address;
  }
  if (const module* m = find_module(name)) return m->base;
  return absl::NotFoundError(modules_.empty() ? "no modules are known yet" : "no module has a symbol '" + std::string(name) + "'");
}

std::string symbol_table::describe(uint64_t address) const {
  const module* m = module_at(address);
  if (m == nullptr) return "";
  if (m->debug) {
    // The DWARF function (its out-of-line one when inlined), as gdb names it.
    const auto scopes = m->debug->functions_at(address);
    if (!scopes.empty() && !scopes.back().name.empty() && scopes.back().entry <= address) {
      const uint64_t off = address - scopes.back().entry;
      return m->name + "!" + scopes.back().name + (off != 0 ? "+" + hex(off) : "");
    }
    if (auto s = m->debug->symbol_at(address); s && address - s->address < 0x100000) {
      const uint64_t off = address - s->address;
      return m->name + "!" + s->name + (off != 0 ? "+" + hex(off) : "");
    }
  }
  if (m->elf) {
    const uint64_t file_address = address - m->bias;
    const elf::symbol* s = m->elf->function_at(file_address);
    if (s == nullptr) {
      // Data: the symbol whose extent holds the address.
      const auto& all = m->elf->symbols();
      auto it = std::upper_bound(all.begin(), all.end(), file_address,
                                 [](uint64_t a, const elf::symbol& sym) { return a < sym.address; });
      while (it != all.begin()) {
        --it;
        if (it->address == file_address || (it->size != 0 && file_address - it->address < it->size)) {
          s = &*it;
          break;
        }
        if (file_address - it->address > 0x10000) break;
      }
    }
    if (s == nullptr) {
      // The nearest symbol counts only inside its own section (not _init+0x30 for a PLT stub).
      const elf::symbol* near = m->elf->symbol_near(file_address);
      const elf::section* here = m->elf->section_at(file_address);
      if (near != nullptr && here != nullptr && m->elf->section_at(near->address) == here) s = near;
    }
    // A nearest symbol far away says nothing useful; fall back to the module offset.
    if (s != nullptr && file_address - s->address < 0x100000) {
      const uint64_t off = file_address - s->address;
      return m->name + "!" + s->name + (off != 0 ? "+" + hex(off) : "");
    }
  }
  return m->name + "+" + hex(address - m->base);
}

std::optional<std::pair<uint64_t, uint64_t>> symbol_table::function_at(uint64_t address) const {
  const module* m = module_at(address);
  if (m == nullptr || !m->elf) return std::nullopt;
  const elf::symbol* s = m->elf->function_at(address - m->bias);
  if (s == nullptr) return std::nullopt;
  return std::make_pair(s->address + m->bias, s->size);
}

std::vector<symbol_match> symbol_table::match(std::string_view module_pattern, std::string_view pattern,
                                              size_t limit) const {
  std::vector<symbol_match> out;
  for (const auto& m : modules_) {
    if (!m.elf || !wildcard_match(module_pattern, m.name)) continue;
    for (const auto& s : m.elf->symbols()) {
      if (out.size() >= limit) return out;
      if (s.address == 0 || !wildcard_match(pattern, s.name)) continue;
      out.push_back({m.name + "!" + s.name, s.address + m.bias});
    }
  }
  return out;
}

std::pair<std::optional<symbol_match>, std::optional<symbol_match>> symbol_table::neighbours(uint64_t address) const {
  const module* m = module_at(address);
  if (m == nullptr || !m->elf) return {};
  const uint64_t a = address - m->bias;
  std::optional<symbol_match> below, above;
  for (const auto& s : m->elf->functions()) {
    if (s.address <= a) below = symbol_match{m->name + "!" + s.name, s.address + m->bias};
    if (s.address > a) {
      above = symbol_match{m->name + "!" + s.name, s.address + m->bias};
      break;
    }
  }
  return {below, above};
}

}  // namespace toolhost::debugger
