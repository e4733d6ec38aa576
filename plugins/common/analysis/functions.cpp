#include "toolhost/analysis/functions.hpp"

#include <algorithm>
#include <map>

#include <toolhost/disasm/decoder.hpp>

#include "toolhost/analysis/code_scan.hpp"
#include "toolhost/analysis/names.hpp"

namespace toolhost::analysis {
namespace {

const section* code_section_at(const image& img, uint64_t address) {
  const section* s = img.section_at(address);
  return s != nullptr && s->executable ? s : nullptr;
}

// Ordinary code: executable and not a stub section (calls into the PLT reach stubs, which are
// named from their slots, not FUN_).
bool is_plain_code(const image& img, uint64_t address) {
  const section* s = code_section_at(img, address);
  return s != nullptr && !s->import_stubs;
}

// `address` starts its section or follows alignment padding (int3 or nop), as a stub does.
bool after_padding(const image& img, uint64_t address) {
  const section* s = img.section_at(address);
  if (s == nullptr) return false;
  if (address == s->address) return true;
  const auto before = img.file_bytes(address - 1, 1);
  return !before.empty() && (before[0] == 0xcc || before[0] == 0x90);
}

// endbr64 / endbr32, which CET-enabled code puts before the first real instruction.
bool starts_with_endbr(std::span<const uint8_t> b) {
  return b.size() >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && (b[3] == 0xfa || b[3] == 0xfb);
}

// The register a `lea`/`mov` loads, from its Intel text: "lea rdi, [...]" -> "rdi".
std::string_view destination(const disasm::instruction& insn) {
  std::string_view t = insn.text;
  const size_t space = t.find(' ');
  const size_t comma = t.find(',');
  if (space == std::string_view::npos || comma == std::string_view::npos || comma < space) return {};
  return t.substr(space + 1, comma - space - 1);
}

// main() as the entry code passes it to __libc_start_main: in rdi on x86-64, pushed last
// before the call on i386.
std::optional<uint64_t> main_from_entry(const image& img, const disasm::decoder& dec) {
  const section* s = code_section_at(img, img.entry());
  if (s == nullptr) return std::nullopt;
  const auto bytes = img.file_bytes(img.entry(), std::min<uint64_t>(256, s->end() - img.entry()));
  std::optional<uint64_t> first_argument;
  for (const auto& insn : dec.decode_all(img.entry(), bytes, 64)) {
    const std::string_view reg = destination(insn);
    if (reg == "rdi" || reg == "edi" || (img.arch() == architecture::x86 && insn.mnemonic == "push")) {
      if (insn.mnemonic == "lea" && insn.memory_target) first_argument = insn.memory_target;
      if ((insn.mnemonic == "mov" || insn.mnemonic == "push") && insn.immediate) first_argument = insn.immediate;
    }
    if (insn.is_call() || insn.is_ret() || insn.kind == disasm::flow::jump) break;
  }
  if (first_argument && is_plain_code(img, *first_argument)) return first_argument;
  return std::nullopt;
}

struct draft {
  std::map<uint64_t, function> functions;
  function& at(uint64_t address, function_source why) {
    function& f = functions[address];
    f.address = address;
    f.sources |= why;
    return f;
  }
};

// PLT entries jump through a GOT slot the loader fills with an import's address; each entry
// takes its import's name (puts, as objdump's <puts@plt>), not FUN_.
void name_stub_sections(const image& img, const disasm::decoder& dec, draft& d) {
  for (const section& s : img.sections()) {
    if (!s.import_stubs) continue;
    std::optional<uint64_t> stub;  // where the current stub starts
    for (const auto& insn : dec.decode_all(s.address, img.section_bytes(s))) {
      if (!stub && insn.mnemonic != "nop") stub = insn.address;  // padding between stubs is no stub
      if (insn.kind != disasm::flow::jump) continue;
      std::optional<uint64_t> slot = insn.memory_target;
      // i386 PIC stubs: jmp [ebx+disp], with ebx holding the GOT's address.
      if (!slot && insn.memory_base == "ebx" && img.got_base()) {
        slot = *img.got_base() + static_cast<uint64_t>(insn.memory_displacement);
        if (img.arch() == architecture::x86) *slot &= 0xffffffffULL;
      }
      if (slot && stub) {
        const import_slot* imp = img.import_at(*slot);
        if (imp != nullptr) {
          function& f = d.at(*stub, from_import_stub);
          f.thunk_slot = *slot;
          if (!f.named_by_symbol) f.name = imp->name;
          f.end = insn.address + insn.length;
          f.end_known = true;
        }
      }
      stub.reset();
    }
  }
}

// A function whose first instruction jumps through an import slot is that import's thunk
// (PE import thunks, .plt.got-style entries reached by calls).
void mark_thunks(const image& img, std::span<const disasm::code_reference> refs, draft& d) {
  for (auto& [address, f] : d.functions) {
    if (f.thunk_slot) continue;
    uint64_t jump_at = address;
    if (starts_with_endbr(img.file_bytes(address, 4))) jump_at += 4;
    auto it = std::lower_bound(refs.begin(), refs.end(), jump_at,
                               [](const disasm::code_reference& r, uint64_t a) { return r.from < a; });
    if (it == refs.end() || it->from != jump_at || it->kind != disasm::reference_kind::indirect_jump) continue;
    const import_slot* imp = img.import_at(it->to);
    if (imp == nullptr) continue;
    f.thunk_slot = it->to;
    f.sources |= from_import_stub;
    if (!f.named_by_symbol) f.name = imp->name;
  }
}

}  // namespace

std::vector<uint64_t> known_function_starts(const image& img) {
  std::vector<uint64_t> out;
  for (const symbol& s : img.symbols()) {
    if (s.kind == symbol_kind::function && img.is_code(s.address)) out.push_back(s.address);
  }
  for (const code_extent& e : img.unwind_extents()) {
    if (img.is_code(e.start)) out.push_back(e.start);
  }
  if (img.is_code(img.entry())) out.push_back(img.entry());
  for (const loader_call& c : img.loader_calls()) {
    if (img.is_code(c.address)) out.push_back(c.address);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

function_table function_table::discover(const image& img, std::span<const disasm::code_reference> references) {
  draft d;
  std::map<uint64_t, uint64_t> sizes;  // from the symbol chosen at each address
  std::map<uint64_t, bool> global;
  for (const symbol& s : img.symbols()) {
    if (s.kind != symbol_kind::function || img.section_at(s.address) == nullptr) continue;
    const bool fresh = d.functions.count(s.address) == 0;
    function& f = d.at(s.address, from_symbol);
    // One name per address: a global one, then a sized one (aliases share their code).
    const bool better = fresh || (s.global && !global[s.address]) ||
                        (s.global == global[s.address] && sizes[s.address] == 0 && s.size != 0);
    if (better) {
      f.name = s.name;
      f.named_by_symbol = true;
      sizes[s.address] = s.size;
      global[s.address] = s.global;
    }
  }

  if (code_section_at(img, img.entry()) != nullptr) d.at(img.entry(), from_entry);
  for (const loader_call& c : img.loader_calls()) {
    if (!is_plain_code(img, c.address)) continue;
    function& f = d.at(c.address, from_loader);
    if (!f.named_by_symbol && f.name.empty()) f.name = c.name;
  }
  const auto mode = decoding_mode(img);
  if (mode) {
    const disasm::decoder dec(*mode);
    name_stub_sections(img, dec, d);
    if (auto m = main_from_entry(img, dec)) d.at(*m, from_main);
  }
  // Extents the file states (symbol sizes, FDEs): a call into one of them is not a new function.
  std::vector<code_extent> stated;
  for (const auto& [address, size] : sizes) {
    if (size != 0) stated.push_back({address, address + size});
  }
  stated.insert(stated.end(), img.unwind_extents().begin(), img.unwind_extents().end());
  std::sort(stated.begin(), stated.end(), [](const code_extent& a, const code_extent& b) { return a.start < b.start; });
  const auto inside_stated = [&stated](uint64_t address) {
    auto it = std::upper_bound(stated.begin(), stated.end(), address,
                               [](uint64_t a, const code_extent& e) { return a < e.start; });
    // Extents may nest or overlap; look back a few for one that holds `address`.
    for (int n = 0; it != stated.begin() && n < 4; ++n) {
      --it;
      if (address > it->start && address < it->end) return true;
    }
    return false;
  };
  if (mode) {
    for (const disasm::code_reference& r : references) {
      // An import thunk nothing calls (lld-link makes one per import): jmp [slot] on its own,
      // after padding, outside any stated function (a leaf function's tail jump through a slot
      // follows code, not padding).
      if (r.kind == disasm::reference_kind::indirect_jump && img.import_at(r.to) != nullptr &&
          is_plain_code(img, r.from) && !inside_stated(r.from) && after_padding(img, r.from)) {
        d.at(r.from, from_import_stub);
      }
      // A callback: its address is loaded (lea, an immediate) and it sits where functions start.
      if (r.kind == disasm::reference_kind::address && is_plain_code(img, r.to) && !inside_stated(r.to) &&
          after_padding(img, r.to)) {
        d.at(r.to, from_pointer);
      }
      if (r.kind != disasm::reference_kind::call || !is_plain_code(img, r.to)) continue;
      // `call $+5; pop reg` reads the program counter (i386 PIC): no function starts there.
      if (r.to == r.from + 5 || inside_stated(r.to)) continue;
      d.at(r.to, from_call);
    }
  }
  for (const code_extent& e : img.unwind_extents()) {
    if (!is_plain_code(img, e.start)) continue;
    function& f = d.at(e.start, from_unwind);
    if (!f.end_known || f.end < e.end) {
      f.end = e.end;
      f.end_known = true;
    }
  }
  for (const auto& [address, size] : sizes) {
    if (size == 0) continue;
    function& f = d.functions[address];
    f.end = address + size;
    f.end_known = true;
  }
  if (mode) mark_thunks(img, references, d);

  function_table t;
  t.functions_.reserve(d.functions.size());
  for (auto& [address, f] : d.functions) t.functions_.push_back(std::move(f));
  t.finish(img);

  // A direct jmp out of a function is a tail call (frame_dummy's jmp to register_tm_clones):
  // its target starts a function unless it lies inside one whose extent the file states. So is
  // a jmp to the very next instruction (a function that is only a tail call to the one laid out
  // after it), which no compiler emits inside a function.
  std::set<uint64_t> tail_targets;
  if (mode) {
    for (const disasm::code_reference& r : references) {
      if (r.kind != disasm::reference_kind::jump || !is_plain_code(img, r.to) || inside_stated(r.to)) continue;
      const function* source = t.containing(r.from);
      if (source == nullptr || t.starting(r.to) != nullptr) continue;
      const auto opcode = img.file_bytes(r.from, 1);
      const bool to_next =
          !opcode.empty() && ((opcode[0] == 0xe9 && r.to == r.from + 5) || (opcode[0] == 0xeb && r.to == r.from + 2));
      if (source->contains(r.to) && !to_next) continue;
      const function* target = t.containing(r.to);
      if (target != nullptr && target->end_known) continue;
      tail_targets.insert(r.to);
    }
  }
  return tail_targets.empty() ? t : t.with_starts(img, tail_targets, from_tail_jump);
}

function_table function_table::with_starts(const image& img, const std::set<uint64_t>& starts,
                                           function_source why) const {
  function_table t;
  std::map<uint64_t, function> merged;
  for (const function& f : functions_) merged.emplace(f.address, f);
  for (uint64_t a : starts) {
    if (img.section_at(a) == nullptr) continue;
    function& f = merged[a];
    f.address = a;
    f.sources |= why;
  }
  t.functions_.reserve(merged.size());
  for (auto& [address, f] : merged) t.functions_.push_back(std::move(f));
  t.finish(img);
  return t;
}

void function_table::finish(const image& img) {
  for (size_t i = 0; i < functions_.size(); ++i) {
    function& f = functions_[i];
    if (f.name.empty()) f.name = f.from(from_entry) ? "entry" : default_function_name(f.address);
    if (f.end_known && f.end > f.address) continue;
    // Without a size, a function runs to the next one or to the end of its section.
    const section* s = img.section_at(f.address);
    uint64_t end = s != nullptr ? s->end() : f.address + 1;
    if (i + 1 < functions_.size() && functions_[i + 1].address < end) end = functions_[i + 1].address;
    f.end = std::max(end, f.address + 1);
    f.end_known = false;
  }
  by_name_.resize(functions_.size());
  for (uint32_t i = 0; i < by_name_.size(); ++i) by_name_[i] = i;
  std::sort(by_name_.begin(), by_name_.end(), [this](uint32_t a, uint32_t b) {
    return functions_[a].name != functions_[b].name ? functions_[a].name < functions_[b].name : a < b;
  });
}

const function* function_table::starting(uint64_t address) const noexcept {
  auto it = std::lower_bound(functions_.begin(), functions_.end(), address,
                             [](const function& f, uint64_t a) { return f.address < a; });
  return it != functions_.end() && it->address == address ? &*it : nullptr;
}

const function* function_table::containing(uint64_t address) const noexcept {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                             [](uint64_t a, const function& f) { return a < f.address; });
  if (it == functions_.begin()) return nullptr;
  const function& f = *std::prev(it);
  return f.contains(address) ? &f : nullptr;
}

const function* function_table::named(std::string_view name) const noexcept {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [this](uint32_t i, std::string_view n) { return functions_[i].name < n; });
  return it != by_name_.end() && functions_[*it].name == name ? &functions_[*it] : nullptr;
}

std::vector<const function*> function_table::all_named(std::string_view name) const {
  std::vector<const function*> out;
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [this](uint32_t i, std::string_view n) { return functions_[i].name < n; });
  for (; it != by_name_.end() && functions_[*it].name == name; ++it) out.push_back(&functions_[*it]);
  return out;
}

}  // namespace toolhost::analysis
