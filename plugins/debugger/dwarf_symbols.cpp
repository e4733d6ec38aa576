#include "dwarf_symbols.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace toolhost::debugger {

namespace {

// Stack reads of at most 8 bytes, in the dwarf library's terms.
dwarf::memory_reader reader_of(const stack_reader* memory) {
  if (memory == nullptr) return {};
  return [memory](uint64_t address, int size) { return (*memory)(address, size); };
}

dwarf::dwarf_registers dwarf_regs(const unwind_registers& r) {
  static_assert(dwarf::dwarf_registers::kCount == unwind_registers::kCount);
  dwarf::dwarf_registers out;
  std::copy(std::begin(r.value), std::end(r.value), std::begin(out.value));
  return out;
}

class cfi_unwinder final : public frame_unwinder {
 public:
  explicit cfi_unwinder(std::shared_ptr<const dwarf::module_debug> debug) : debug_(std::move(debug)) {}

  std::optional<unwinder_step> unwind(uint64_t pc, bool activation, const unwind_registers& regs,
                                      const stack_reader& memory) const override {
    auto r = debug_->unwind_step(pc, activation, dwarf_regs(regs), reader_of(&memory));
    if (!r) return std::nullopt;
    unwinder_step step;
    std::copy(std::begin(r->caller.value), std::end(r->caller.value), std::begin(step.caller.value));
    step.signal_frame = r->signal_frame;
    return step;
  }

 private:
  std::shared_ptr<const dwarf::module_debug> debug_;
};

class dwarf_source final : public symbol_source {
 public:
  dwarf_source(std::shared_ptr<const dwarf::module_debug> debug, uint64_t base, std::string file)
      : debug_(std::move(debug)), base_(base), file_(std::move(file)) {}

  const dwarf::module_debug& debug() const { return *debug_; }
  uint64_t base() const { return base_; }

  std::string status() const override {
    if (debug_->has_dwarf()) return "dwarf symbols";
    return debug_->full_symbols() ? "symbols" : "export symbols";
  }
  std::string file() const override { return debug_->debug_file().empty() ? file_ : debug_->debug_file(); }

  std::optional<symbol_hit> find(std::string_view name) const override {
    index();
    if (auto it = by_name_.find(std::string(name)); it != by_name_.end()) return hit(all()[it->second]);
    if (auto it = by_lower_name_.find(lower_case(name)); it != by_lower_name_.end()) return hit(all()[it->second]);
    return std::nullopt;
  }

  std::optional<symbol_hit> nearest(uint64_t offset) const override {
    const uint64_t address = base_ + offset;
    // The DWARF function (the out-of-line one when the code is inlined), named as gdb names it.
    const auto scopes = debug_->functions_at(address);
    if (!scopes.empty() && !scopes.back().name.empty() && scopes.back().entry <= address &&
        scopes.back().entry >= base_) {
      symbol_hit h{scopes.back().name, scopes.back().entry - base_, 0, true};
      if (auto s = debug_->symbol_at(scopes.back().entry); s && s->address == scopes.back().entry) h.size = s->size;
      return h;
    }
    auto s = debug_->symbol_at(address);
    if (!s || s->address < base_) return std::nullopt;
    return hit(*s);
  }

  std::optional<symbol_hit> following(uint64_t offset) const override {
    index();
    const uint64_t address = base_ + offset;
    auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                               [this](uint64_t a, size_t i) { return a < all()[i].address; });
    if (it == functions_.end()) return std::nullopt;
    return hit(all()[*it]);
  }

  std::optional<symbol_hit> function_at(uint64_t offset) const override {
    const uint64_t address = base_ + offset;
    auto s = debug_->symbol_at(address);
    if (!s || !s->function || s->address < base_ || (s->size != 0 && address - s->address >= s->size))
      return std::nullopt;
    return hit(*s);
  }

  void match(std::string_view pattern, const std::function<bool(const symbol_hit&)>& visit) const override {
    for (const auto& s : all()) {
      if (s.address < base_ || !wildcard_match(pattern, s.name)) continue;
      if (!visit(hit(s))) return;
    }
  }

  const types::type_table* types() const override { return debug_->types(); }

  std::optional<source_position> line_at(uint64_t offset) const override {
    auto l = debug_->line_at(base_ + offset);
    if (!l) return std::nullopt;
    return source_position{l->file, l->line, l->address >= base_ ? l->address - base_ : 0};
  }

  std::vector<scope_hit> scopes_at(uint64_t offset) const override {
    std::vector<scope_hit> out;
    for (auto& s : debug_->functions_at(base_ + offset)) {
      scope_hit h{std::move(s.name), s.entry >= base_ ? s.entry - base_ : 0, s.inlined, std::nullopt};
      if (s.call_site) h.call_site = source_position{s.call_site->file, s.call_site->line, 0};
      out.push_back(std::move(h));
    }
    return out;
  }

  std::vector<uint64_t> tail_calls(uint64_t return_offset, uint64_t callee_entry) const override {
    std::vector<uint64_t> out;
    for (uint64_t rp : debug_->tail_calls(base_ + return_offset, base_ + callee_entry)) {
      if (rp >= base_) out.push_back(rp - base_);
    }
    return out;
  }

  std::vector<variable_value> variables(const frame_query& q) const override {
    // The frame and its callers (for values at entry), as far as they have DWARF sources.
    std::vector<dwarf::frame_view> chain;
    chain.reserve(17);
    chain.push_back(view(q, *this));
    std::vector<const dwarf_source*> owners{this};
    for (const frame_query* c = &q; c->caller != nullptr && chain.size() < 17; c = c->caller) {
      const auto* source = dynamic_cast<const dwarf_source*>(c->caller_source);
      if (source == nullptr) break;
      chain.push_back(view(*c->caller, *source));
      owners.push_back(source);
    }
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      chain[i].caller = &chain[i + 1];
      chain[i].caller_module = owners[i + 1]->debug_.get();
    }
    const dwarf::frame_view& frame = chain.front();
    std::vector<variable_value> out;
    for (auto& v : debug_->variables(frame, reader_of(q.memory))) {
      variable_value o;
      o.name = std::move(v.name);
      o.parameter = v.parameter;
      o.type = v.type;
      o.where = v.where == dwarf::variable::state::memory  ? variable_value::state::memory
                : v.where == dwarf::variable::state::bytes ? variable_value::state::bytes
                                                           : variable_value::state::unavailable;
      o.address = v.address;
      o.bytes = std::move(v.bytes);
      o.problem = std::move(v.problem);
      out.push_back(std::move(o));
    }
    return out;
  }

 private:
  static dwarf::frame_view view(const frame_query& q, const dwarf_source& source) {
    dwarf::frame_view f;
    f.pc = source.base_ + q.offset;
    f.activation = q.activation;
    f.regs = dwarf_regs(q.regs);
    f.inline_depth = q.inline_depth;
    return f;
  }

  const std::vector<dwarf::symbol>& all() const { return debug_->symbols(); }

  void index() const {
    if (indexed_) return;
    indexed_ = true;
    const auto& symbols = all();
    for (size_t i = 0; i < symbols.size(); ++i) {
      // A global definition wins over a local one of the same name.
      auto [it, fresh] = by_name_.try_emplace(symbols[i].name, i);
      if (!fresh && symbols[i].function && !symbols[it->second].function) it->second = i;
      by_lower_name_.try_emplace(lower_case(symbols[i].name), i);
      if (symbols[i].function) functions_.push_back(i);
    }
  }

  symbol_hit hit(const dwarf::symbol& s) const { return {s.name, s.address - base_, s.size, s.function}; }

  std::shared_ptr<const dwarf::module_debug> debug_;
  uint64_t base_;
  std::string file_;
  mutable bool indexed_ = false;
  mutable std::unordered_map<std::string, size_t> by_name_, by_lower_name_;
  mutable std::vector<size_t> functions_;  // indexes of function symbols, by address
};

void add(std::shared_ptr<const dwarf::module_debug> debug, const module& m, module_symbols& out) {
  out.unwinder = std::make_shared<cfi_unwinder>(debug);
  // Without DWARF or a fuller symbol table than the file's own, the ELF source says it all.
  if (!debug->has_dwarf() && debug->debug_file().empty() && !out.sources.empty()) return;
  if (!debug->debug_file().empty()) out.facts.push_back({"Debug file", debug->debug_file()});
  out.sources.insert(out.sources.begin(), std::make_shared<dwarf_source>(debug, m.base, m.path));
}

}  // namespace

dwarf::search_paths default_debug_paths() {
  dwarf::search_paths paths;
  if (const char* cache = std::getenv("DEBUGINFOD_CACHE_PATH"); cache != nullptr && *cache == '/') {
    paths.folders.push_back(cache);
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    paths.folders.push_back(std::string(xdg) + "/debuginfod_client");
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    paths.folders.push_back(std::string(home) + "/.cache/debuginfod_client");
  }
  return paths;
}

void add_dwarf_symbols(const module& m, const dwarf::search_paths& paths, module_symbols& out) {
  auto debug = dwarf::module_debug::open(m.path, m.base, paths);
  if (!debug.ok()) {
    if (out.problem.empty()) out.problem = std::string(debug.status().message());
    return;
  }
  add(std::shared_ptr<const dwarf::module_debug>(std::move(*debug)), m, out);
}

std::optional<module_symbols> memory_image_symbols(const module& m, const image_reader& read) {
  // An ELF image mapped by the kernel: the headers, then everything up to the section table.
  auto header = read(m.base, 64);
  if (!header.ok() || header->size() < 64 ||
      header->compare(0, 4,
                      "\x7f"
                      "ELF") != 0 ||
      (*header)[4] != 2) {
    return std::nullopt;
  }
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  std::memcpy(&shoff, header->data() + 0x28, 8);
  std::memcpy(&shentsize, header->data() + 0x3a, 2);
  std::memcpy(&shnum, header->data() + 0x3c, 2);
  const uint64_t size = shoff + static_cast<uint64_t>(shentsize) * shnum;
  module_symbols out;
  if (size < 64 || size > (1u << 20)) {
    out.problem = "its ELF image in memory has no section table within 1 MiB";
    return out;
  }
  auto image = read(m.base, size);
  if (!image.ok() || image->size() != size) {
    out.problem = "its ELF image in memory is not readable";
    return out;
  }
  auto debug = dwarf::module_debug::open_image(m.name, std::move(*image), m.base);
  if (!debug.ok()) {
    out.problem = std::string(debug.status().message());
    return out;
  }
  out.facts.push_back({"Image", "read from the target's memory"});
  add(std::shared_ptr<const dwarf::module_debug>(std::move(*debug)), m, out);
  return out;
}

}  // namespace toolhost::debugger
