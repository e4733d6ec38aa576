#include "toolhost/disasm/reference_scan.hpp"

#include <Zydis/Zydis.h>

#include <algorithm>

namespace toolhost::disasm {
namespace {

// objdump -d prints a run of this many zero bytes as "..." and resumes after it, and drops a
// run shorter than kZeroesAtEnd that reaches the end of what it disassembles.
constexpr size_t kSkipZeroes = 8;
constexpr size_t kZeroesAtEnd = 3;

ZydisMachineMode machine_mode(mode m) {
  switch (m) {
    case mode::x86_32: return ZYDIS_MACHINE_MODE_LEGACY_32;
    case mode::x86_16: return ZYDIS_MACHINE_MODE_LEGACY_16;
    default: return ZYDIS_MACHINE_MODE_LONG_64;
  }
}

ZydisStackWidth stack_width(mode m) {
  switch (m) {
    case mode::x86_32: return ZYDIS_STACK_WIDTH_32;
    case mode::x86_16: return ZYDIS_STACK_WIDTH_16;
    default: return ZYDIS_STACK_WIDTH_64;
  }
}

uint64_t address_mask(mode m) {
  switch (m) {
    case mode::x86_32: return 0xffffffffULL;
    case mode::x86_16: return 0xffffULL;
    default: return ~0ULL;
  }
}

// Whether the raw encoding can name an absolute address: a disp32 without a base register
// (rip-relative in 64-bit code), a moffs, or a 32/64-bit immediate that lands in the image.
// Only such instructions pay for operand decoding.
// The minimal decoder fills `raw` but not every attribute: a ModRM or SIB byte is known to be
// there by its offset (never 0: an opcode byte comes first).
bool may_name_address(const ZydisDecodedInstruction& insn, const reference_scanner& scanner, uint64_t mask) {
  const auto& raw = insn.raw;
  const bool has_modrm = raw.modrm.offset != 0;
  if (has_modrm && raw.modrm.mod == 0) {
    if (raw.modrm.rm == 5) return true;
    if (raw.modrm.rm == 4 && raw.sib.offset != 0 && raw.sib.base == 5) return true;
  }
  if (!has_modrm && raw.disp.size >= 32) return true;  // moffs
  for (const auto& imm : raw.imm) {
    if (imm.size < 32 || imm.is_relative) continue;
    const uint64_t zero_extended = imm.size >= 64 ? imm.value.u : (imm.value.u & 0xffffffffULL);
    if (scanner.is_mapped(zero_extended & mask) || scanner.is_mapped(static_cast<uint64_t>(imm.value.s) & mask)) {
      return true;
    }
  }
  return false;
}

reference_kind memory_kind(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand& op, bool indexed) {
  if (op.mem.type == ZYDIS_MEMOP_TYPE_AGEN) return reference_kind::address;
  if (!indexed && insn.meta.category == ZYDIS_CATEGORY_CALL) return reference_kind::indirect_call;
  if (!indexed && insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR) return reference_kind::indirect_jump;
  const bool reads = (op.actions & (ZYDIS_OPERAND_ACTION_READ | ZYDIS_OPERAND_ACTION_CONDREAD)) != 0;
  const bool writes = (op.actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE)) != 0;
  if (reads && writes) return reference_kind::read_write;
  return writes ? reference_kind::write : reference_kind::read;
}

// Decodes the instruction again, fully, and reports the addresses its operands name.
void operand_references(const ZydisDecoder& decoder, std::span<const uint8_t> bytes, uint64_t ip, uint64_t mask,
                        const reference_scanner& scanner, std::vector<code_reference>& out) {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  if (ZYAN_FAILED(ZydisDecoderDecodeFull(&decoder, bytes.data(), bytes.size(), &insn, ops))) return;
  for (uint8_t i = 0; i < insn.operand_count_visible; ++i) {
    const ZydisDecodedOperand& op = ops[i];
    if (op.type == ZYDIS_OPERAND_TYPE_MEMORY) {
      if (op.mem.segment == ZYDIS_REGISTER_FS || op.mem.segment == ZYDIS_REGISTER_GS) continue;  // TLS offsets
      uint64_t to = 0;
      if (op.mem.base == ZYDIS_REGISTER_RIP || op.mem.base == ZYDIS_REGISTER_EIP) {
        ZyanU64 absolute = 0;
        if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(&insn, &op, ip, &absolute))) continue;
        to = absolute;
      } else if (op.mem.base == ZYDIS_REGISTER_NONE && op.mem.disp.has_displacement) {
        to = static_cast<uint64_t>(op.mem.disp.value) & mask;  // [disp32] or a table [disp32 + reg*scale]
      } else {
        continue;
      }
      if (!scanner.is_mapped(to)) continue;
      out.push_back({ip, to, memory_kind(insn, op, op.mem.index != ZYDIS_REGISTER_NONE), i});
    } else if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && !op.imm.is_relative && op.size >= 32) {
      const uint64_t value = (op.imm.is_signed ? static_cast<uint64_t>(op.imm.value.s) : op.imm.value.u) & mask;
      if (scanner.is_mapped(value)) out.push_back({ip, value, reference_kind::address, i});
    }
  }
}

}  // namespace

reference_scanner::reference_scanner(mode m, std::vector<address_range> mapped) : mode_(m), mapped_(std::move(mapped)) {
  std::sort(mapped_.begin(), mapped_.end(),
            [](const address_range& a, const address_range& b) { return a.start < b.start; });
}

bool reference_scanner::is_mapped(uint64_t address) const noexcept {
  auto it = std::upper_bound(mapped_.begin(), mapped_.end(), address,
                             [](uint64_t a, const address_range& r) { return a < r.start; });
  if (it == mapped_.begin()) return false;
  --it;
  return address < it->end;
}

scan_stats reference_scanner::scan(uint64_t address, std::span<const uint8_t> bytes, std::span<const uint64_t> resync,
                                   std::vector<code_reference>& out) const {
  scan_stats stats;
  // Lengths, categories and raw fields come from the minimal decoder (a quarter faster over
  // libLLVM's .text, the same 12.7 M instructions); the few instructions that may name an
  // address are decoded again in full for their operands.
  ZydisDecoder decoder, full;
  if (ZYAN_FAILED(ZydisDecoderInit(&decoder, machine_mode(mode_), stack_width(mode_))) ||
      ZYAN_FAILED(ZydisDecoderEnableMode(&decoder, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE)) ||
      ZYAN_FAILED(ZydisDecoderInit(&full, machine_mode(mode_), stack_width(mode_)))) {
    return stats;
  }
  const uint64_t mask = address_mask(mode_);
  // The first restart point after the start of the sweep.
  auto next_sync = std::upper_bound(resync.begin(), resync.end(), address);
  size_t at = 0;
  while (at < bytes.size()) {
    const uint64_t ip = address + at;
    while (next_sync != resync.end() && *next_sync <= ip) ++next_sync;
    const size_t stop = next_sync != resync.end() && *next_sync - address < bytes.size()
                            ? static_cast<size_t>(*next_sync - address)
                            : bytes.size();
    if (bytes[at] == 0) {
      size_t zeros = at;
      while (zeros < stop && zeros - at < kSkipZeroes && bytes[zeros] == 0) ++zeros;
      if (zeros - at >= kSkipZeroes) {
        while (zeros < stop && bytes[zeros] == 0) ++zeros;
        at = zeros;
        continue;
      }
      if (zeros == stop && zeros - at < kZeroesAtEnd) {
        at = zeros;
        continue;
      }
    }
    ZydisDecoderContext context;
    ZydisDecodedInstruction insn;
    if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&decoder, &context, bytes.data() + at, stop - at, &insn))) {
      ++stats.undecodable;
      ++at;
      continue;
    }
    ++stats.instructions;
    const uint64_t next = ip + insn.length;
    const ZydisInstructionCategory category = insn.meta.category;
    const bool branch =
        category == ZYDIS_CATEGORY_CALL || category == ZYDIS_CATEGORY_UNCOND_BR || category == ZYDIS_CATEGORY_COND_BR;
    if (branch && insn.raw.imm[0].is_relative) {
      const uint64_t to = (next + static_cast<uint64_t>(insn.raw.imm[0].value.s)) & mask;
      const reference_kind kind = category == ZYDIS_CATEGORY_CALL        ? reference_kind::call
                                  : category == ZYDIS_CATEGORY_UNCOND_BR ? reference_kind::jump
                                                                         : reference_kind::conditional_jump;
      out.push_back({ip, to, kind, 0});
    } else if (may_name_address(insn, *this, mask)) {
      operand_references(full, bytes.subspan(at, insn.length), ip, mask, *this, out);
    }
    at += insn.length;
  }
  return stats;
}

}  // namespace toolhost::disasm
