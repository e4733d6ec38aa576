#include "toolhost/analysis/function_body.hpp"

#include <algorithm>
#include <set>

#include "toolhost/analysis/code_scan.hpp"

namespace toolhost::analysis {
namespace {

bool is_padding(const disasm::instruction& insn) { return insn.mnemonic == "nop" || insn.mnemonic == "int3"; }

// Control does not go on to the next instruction: jumps, returns and the traps compilers put
// where execution must not arrive (ud2, hlt, int3). syscall and int N come back.
bool ends_block(const disasm::instruction& insn) {
  if (insn.kind == disasm::flow::jump || insn.kind == disasm::flow::conditional_jump ||
      insn.kind == disasm::flow::ret) {
    return true;
  }
  return insn.mnemonic == "ud2" || insn.mnemonic == "hlt" || insn.mnemonic == "int3" || insn.mnemonic == "(bad)";
}

}  // namespace

function_body decode_function(const image& img, const function& f, size_t max_instructions) {
  function_body body;
  const auto mode = decoding_mode(img);
  const section* s = img.section_at(f.address);
  if (!mode || s == nullptr || !s->executable) return body;
  const uint64_t file_end = s->address + s->file_size;
  const uint64_t end = std::min(f.end, file_end);
  if (end <= f.address) return body;
  const disasm::decoder dec(*mode, {.pad_addresses = false, .uppercase_hex = false});
  body.instructions = dec.decode_all(f.address, img.file_bytes(f.address, end - f.address),
                                     max_instructions == SIZE_MAX ? SIZE_MAX : max_instructions + 1);
  if (body.instructions.size() > max_instructions) {
    body.instructions.resize(max_instructions);
    body.truncated = true;
  } else {
    // Alignment padding after the last instruction belongs to no one.
    while (!body.instructions.empty() && is_padding(body.instructions.back())) body.instructions.pop_back();
  }
  if (body.instructions.empty()) return body;

  const uint64_t decoded_end = body.instructions.back().address + body.instructions.back().length;
  std::set<uint64_t> boundaries;
  for (const auto& insn : body.instructions) boundaries.insert(insn.address);
  std::set<uint64_t> leaders{f.address};
  for (const auto& insn : body.instructions) {
    if (insn.is_jump() && insn.target && *insn.target >= f.address && *insn.target < decoded_end &&
        boundaries.count(*insn.target) != 0) {
      leaders.insert(*insn.target);
    }
    if (ends_block(insn)) leaders.insert(insn.address + insn.length);
  }
  for (size_t i = 0; i < body.instructions.size();) {
    basic_block b;
    b.start = body.instructions[i].address;
    size_t j = i;
    while (j + 1 < body.instructions.size() && leaders.count(body.instructions[j + 1].address) == 0) ++j;
    const disasm::instruction& last = body.instructions[j];
    b.end = last.address + last.length;
    if (last.is_jump() && last.target) b.successors.push_back(*last.target);
    if (!ends_block(last) || last.kind == disasm::flow::conditional_jump) {
      if (j + 1 < body.instructions.size()) b.successors.push_back(b.end);
    }
    std::sort(b.successors.begin(), b.successors.end());
    b.successors.erase(std::unique(b.successors.begin(), b.successors.end()), b.successors.end());
    body.blocks.push_back(std::move(b));
    i = j + 1;
  }
  return body;
}

}  // namespace toolhost::analysis
