#include "program.hpp"

#include <elf.h>

#include <span>

#include <toolhost/disasm/decoder.hpp>
#include <toolhost/eleven/values.hpp>

namespace toolhost::eleven {
namespace {

std::span<const uint8_t> section_bytes(const elf::elf_file& file, const elf::section& s) {
  if (!s.has_file_bytes() || s.offset > file.bytes().size() || file.bytes().size() - s.offset < s.size) return {};
  return {reinterpret_cast<const uint8_t*>(file.bytes().data()) + s.offset, static_cast<size_t>(s.size)};
}

// PLT stubs jump to imports; Ghidra shows them as thunks named after the import, not FUN_.
bool is_plt(const elf::section& s) { return s.name.rfind(".plt", 0) == 0; }

const elf::section* code_section_at(const elf::elf_file& file, uint64_t address) {
  const elf::section* s = file.section_at(address);
  return s != nullptr && s->executable() && !is_plt(*s) ? s : nullptr;
}

// The register a `lea`/`mov` loads, from its Intel text: "lea rdi, [...]" -> "rdi".
std::string_view destination(const disasm::instruction& insn) {
  std::string_view t = insn.text;
  const size_t space = t.find(' ');
  const size_t comma = t.find(',');
  if (space == std::string_view::npos || comma == std::string_view::npos || comma < space) return {};
  return t.substr(space + 1, comma - space - 1);
}

}  // namespace

absl::StatusOr<program> program::open(const std::filesystem::path& path) {
  auto file = elf::elf_file::open(path);
  if (!file.ok()) return file.status();
  return from_elf(std::move(*file), std::filesystem::absolute(path).lexically_normal());
}

program program::from_elf(elf::elf_file file, const std::filesystem::path& path) {
  program p(std::move(file));
  p.path_ = path;
  const elf::elf_file& e = p.elf_;

  for (const elf::symbol& f : e.functions()) {
    if (!p.is_mapped(f.address)) continue;
    function_info info;
    info.address = f.address;
    info.end = f.address + f.size;  // 0-sized symbols get an end from their neighbour below
    info.original_name = f.name;
    info.from_symbol = true;
    p.discovered_.emplace(f.address, std::move(info));
  }

  const bool x86 = e.machine() == EM_X86_64 || e.machine() == EM_386;
  std::set<uint64_t> found;
  if (x86) {
    const disasm::decoder dec(e.machine() == EM_X86_64 ? disasm::mode::x86_64 : disasm::mode::x86_32);
    for (const elf::section& s : e.sections()) {
      if (!s.allocated() || !s.executable() || is_plt(s)) continue;
      for (const auto& insn : dec.decode_all(s.address, section_bytes(e, s))) {
        if (insn.is_call() && insn.target && code_section_at(e, *insn.target) != nullptr) found.insert(*insn.target);
      }
    }
    // The entry code hands main to __libc_start_main in its first argument register.
    if (code_section_at(e, e.entry()) != nullptr) {
      found.insert(e.entry());
      const elf::section* s = code_section_at(e, e.entry());
      const auto all = section_bytes(e, *s);
      const uint64_t into = e.entry() - s->address;
      // An empty span (a section the file does not hold) must not be sliced past its end.
      const auto bytes = into < all.size() ? all.subspan(into) : std::span<const uint8_t>();
      std::optional<uint64_t> first_argument;
      for (const auto& insn : dec.decode_all(e.entry(), bytes, 64)) {
        const std::string_view reg = destination(insn);
        if (reg == "rdi" || reg == "edi" || (e.machine() == EM_386 && insn.mnemonic == "push")) {
          if (insn.mnemonic == "lea" && insn.memory_target) first_argument = insn.memory_target;
          if ((insn.mnemonic == "mov" || insn.mnemonic == "push") && insn.immediate) first_argument = insn.immediate;
        }
        if (insn.is_call() || insn.is_ret() || insn.kind == disasm::flow::jump) break;
      }
      if (first_argument && code_section_at(e, *first_argument) != nullptr) found.insert(*first_argument);
    }
  }
  if (x86) p.name_import_thunks();
  for (uint64_t address : found) {
    if (p.discovered_.count(address) != 0) continue;
    function_info info;
    info.address = address;
    info.original_name = address == e.entry() ? "entry" : ghidra_function_name(address);
    p.discovered_.emplace(address, std::move(info));
  }
  p.rebuild();
  return p;
}

// PLT stubs jump through a GOT slot that the loader fills with an import's address; like
// Ghidra, the window names each stub after its import (puts, not FUN_00401030).
void program::name_import_thunks() {
  const disasm::decoder dec(elf_.machine() == EM_X86_64 ? disasm::mode::x86_64 : disasm::mode::x86_32);
  for (const elf::section& s : elf_.sections()) {
    if (!s.allocated() || !s.executable() || !is_plt(s)) continue;
    std::optional<uint64_t> stub;  // where the current stub starts
    for (const auto& insn : dec.decode_all(s.address, section_bytes(elf_, s))) {
      if (!stub && insn.mnemonic != "nop") stub = insn.address;  // padding between stubs is no stub
      if (insn.kind != disasm::flow::jump) continue;
      if (insn.memory_target && stub) {
        const elf::import* imp = elf_.import_at_slot(*insn.memory_target);
        // In 32-bit PIC stubs the slot is relative to ebx; those keep no name here.
        if (imp != nullptr && discovered_.count(*stub) == 0) {
          function_info info;
          info.address = *stub;
          info.end = insn.address + insn.length;
          info.original_name = imp->name;
          discovered_.emplace(*stub, std::move(info));
        }
      }
      stub.reset();
    }
  }
}

void program::set_procedures(const std::set<uint64_t>& addresses) {
  if (addresses == procedures_) return;  // most edits leave them alone; rebuilding copies every function
  procedures_ = addresses;
  rebuild();
}

void program::rebuild() {
  functions_ = discovered_;
  for (uint64_t address : procedures_) {
    if (functions_.count(address) != 0) continue;
    function_info info;
    info.address = address;
    info.original_name = ghidra_function_name(address);
    functions_.emplace(address, std::move(info));
  }
  // Functions without a size end where the next one starts, or with their section.
  for (auto it = functions_.begin(); it != functions_.end(); ++it) {
    function_info& f = it->second;
    if (f.from_symbol && f.end > f.address) continue;
    auto next = std::next(it);
    const elf::section* s = elf_.section_at(f.address);
    uint64_t end = s != nullptr ? s->address + s->size : f.address + 1;
    if (next != functions_.end() && next->first < end) end = next->first;
    f.end = std::max(end, f.address + 1);
  }
}

const function_info* program::function_starting(uint64_t address) const {
  auto it = functions_.find(address);
  return it == functions_.end() ? nullptr : &it->second;
}

const function_info* program::function_containing(uint64_t address) const {
  auto it = functions_.upper_bound(address);
  if (it == functions_.begin()) return nullptr;
  const function_info& f = std::prev(it)->second;
  return address < f.end ? &f : nullptr;
}

bool program::is_mapped(uint64_t address) const { return elf_.section_at(address) != nullptr; }

bool program::is_code(uint64_t address) const {
  const elf::section* s = elf_.section_at(address);
  return s != nullptr && s->executable();
}

bool program::has_file_bytes(uint64_t address, size_t size) const {
  for (size_t i = 0; i < size; ++i) {
    if (!elf_.file_offset(address + i)) return false;
  }
  return true;
}

}  // namespace toolhost::eleven
