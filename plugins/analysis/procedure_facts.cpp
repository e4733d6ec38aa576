// Facts about one procedure several tools report: its signature, its instructions as text,
// its callers and callees, the references it makes and receives.
#include "procedure_facts.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace toolhost::analysis_server {

std::optional<std::string> signature_of(const an::function& f) {
  if (f.name.rfind("_Z", 0) != 0) return std::nullopt;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(f.name.c_str(), nullptr, nullptr, &status),
                                                   &std::free);
  if (status != 0 || text == nullptr) return std::nullopt;
  return std::string(text.get());
}

std::string instruction_line(const an::program_analysis& a, const disasm::instruction& insn) {
  std::string line = an::hex_address(insn.address) + ": " + insn.text;
  const std::optional<uint64_t> named = insn.target ? insn.target : insn.memory_target;
  if (named) {
    if (const an::name_entry* n = a.name_at(*named)) line += " <" + n->text + ">";
  }
  return line;
}

std::set<uint64_t> caller_starts(const an::program_analysis& a, const an::function& f) {
  std::set<uint64_t> out;
  const auto [first, last] = a.references().to(f.address);
  for (size_t i = first; i < last; ++i) {
    const auto& r = a.references().by_target(i);
    if (r.kind != disasm::reference_kind::call) continue;
    if (const an::function* caller = a.functions().containing(r.from)) out.insert(caller->address);
  }
  return out;
}

std::set<uint64_t> callee_starts(const an::program_analysis& a, const an::function& f) {
  std::set<uint64_t> out;
  for (const auto& r : a.references().from(f.address, f.end)) {
    if (r.kind != disasm::reference_kind::call) continue;
    if (const an::function* callee = a.functions().containing(r.to)) out.insert(callee->address);
  }
  return out;
}

std::set<uint64_t> reference_sources(const an::program_analysis& a, uint64_t address) {
  std::set<uint64_t> out;
  const auto [first, last] = a.references().to(address);
  for (size_t i = first; i < last; ++i) out.insert(a.references().by_target(i).from);
  return out;
}

std::vector<disasm::code_reference> reference_edges(const an::program_analysis& a, const an::function_body& body,
                                                    bool incoming, bool only_from_outside) {
  std::vector<disasm::code_reference> out;
  if (body.instructions.empty()) return out;
  const uint64_t start = body.instructions.front().address;
  const uint64_t end = body.instructions.back().address + body.instructions.back().length;
  if (incoming) {
    const auto [first, last] = a.references().to(start, end);
    for (size_t i = first; i < last; ++i) {
      const auto& r = a.references().by_target(i);
      if (only_from_outside && r.from >= start && r.from < end) continue;
      out.push_back(r);
    }
  } else {
    const auto refs = a.references().from(start, end);
    out.assign(refs.begin(), refs.end());
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return x.from != y.from ? x.from < y.from : x.to != y.to ? x.to < y.to : x.kind < y.kind;
  });
  return out;
}

}  // namespace toolhost::analysis_server
