#include "toolhost/disasm/decoder.hpp"

#include <Zydis/Zydis.h>

#include <absl/status/status.h>

namespace toolhost::disasm {
namespace {

flow flow_of(const ZydisDecodedInstruction& insn) {
  switch (insn.meta.category) {
    case ZYDIS_CATEGORY_CALL: return flow::call;
    case ZYDIS_CATEGORY_UNCOND_BR: return flow::jump;
    case ZYDIS_CATEGORY_COND_BR: return flow::conditional_jump;
    case ZYDIS_CATEGORY_RET: return flow::ret;
    case ZYDIS_CATEGORY_INTERRUPT:
    case ZYDIS_CATEGORY_SYSCALL: return flow::interrupt;
    default: break;
  }
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_IRET:
    case ZYDIS_MNEMONIC_IRETD:
    case ZYDIS_MNEMONIC_IRETQ:
    case ZYDIS_MNEMONIC_SYSRET: return flow::ret;
    case ZYDIS_MNEMONIC_UD2:
    case ZYDIS_MNEMONIC_HLT: return flow::interrupt;
    default: return flow::next;
  }
}

ZydisMachineMode zydis_mode(mode m) {
  switch (m) {
    case mode::x86_32: return ZYDIS_MACHINE_MODE_LEGACY_32;
    case mode::x86_16: return ZYDIS_MACHINE_MODE_LEGACY_16;
    default: return ZYDIS_MACHINE_MODE_LONG_64;
  }
}

ZydisStackWidth zydis_stack(mode m) {
  switch (m) {
    case mode::x86_32: return ZYDIS_STACK_WIDTH_32;
    case mode::x86_16: return ZYDIS_STACK_WIDTH_16;
    default: return ZYDIS_STACK_WIDTH_64;
  }
}

}  // namespace

decoder::decoder(mode m, text_style style) : mode_(m), style_(style) {}

absl::StatusOr<instruction> decoder::decode(uint64_t address, std::span<const uint8_t> bytes) const {
  if (bytes.empty()) return absl::OutOfRangeError("no bytes to decode");
  // Zydis objects are small and cheap to set up; building them per call keeps the decoder
  // free of shared mutable state.
  ZydisDecoder dec;
  if (ZYAN_FAILED(ZydisDecoderInit(&dec, zydis_mode(mode_), zydis_stack(mode_)))) {
    return absl::InternalError("Zydis refused the decoder mode");
  }
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  const ZyanStatus st = ZydisDecoderDecodeFull(&dec, bytes.data(), bytes.size(), &insn, ops);
  if (ZYAN_FAILED(st)) {
    if (st == ZYDIS_STATUS_NO_MORE_DATA) return absl::OutOfRangeError("the bytes end inside an instruction");
    return absl::InvalidArgumentError("not a valid instruction");
  }

  instruction out;
  out.address = address;
  out.length = insn.length;
  out.kind = flow_of(insn);
  const char* mnemonic = ZydisMnemonicGetString(insn.mnemonic);
  out.mnemonic = mnemonic != nullptr ? mnemonic : "";

  ZydisFormatter fmt;
  ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_INTEL);
  if (!style_.pad_addresses) {
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED);
  }
  if (!style_.uppercase_hex) ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE);
  char text[256];
  if (ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&fmt, &insn, ops, insn.operand_count_visible, text, sizeof text,
                                                   address, ZYAN_NULL))) {
    out.text = text;
  } else {
    out.text = out.mnemonic;
  }

  for (uint8_t i = 0; i < insn.operand_count_visible; ++i) {
    const ZydisDecodedOperand& op = ops[i];
    ZyanU64 absolute = 0;
    if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
      if (out.kind != flow::next && out.kind != flow::interrupt && out.kind != flow::ret) {
        if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &op, address, &absolute))) out.target = absolute;
      } else if (!out.immediate) {
        out.immediate = op.imm.is_signed ? static_cast<uint64_t>(op.imm.value.s) : op.imm.value.u;
      }
    } else if (op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.index == ZYDIS_REGISTER_NONE &&
               (op.mem.base == ZYDIS_REGISTER_RIP || op.mem.base == ZYDIS_REGISTER_EIP ||
                op.mem.base == ZYDIS_REGISTER_NONE) &&
               op.mem.segment != ZYDIS_REGISTER_FS && op.mem.segment != ZYDIS_REGISTER_GS) {
      if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &op, address, &absolute))) out.memory_target = absolute;
    } else if (op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.index == ZYDIS_REGISTER_NONE && out.memory_base.empty() &&
               op.mem.segment != ZYDIS_REGISTER_FS && op.mem.segment != ZYDIS_REGISTER_GS) {
      const char* base = ZydisRegisterGetString(op.mem.base);
      out.memory_base = base != nullptr ? base : "";
      out.memory_displacement = op.mem.disp.value;
    } else if (op.type == ZYDIS_OPERAND_TYPE_POINTER && out.kind != flow::next) {
      out.target = op.ptr.offset;  // far call/jmp seg:offset
    }
  }
  return out;
}

std::vector<instruction> decoder::decode_all(uint64_t address, std::span<const uint8_t> bytes, size_t max_count) const {
  std::vector<instruction> out;
  size_t at = 0;
  while (at < bytes.size() && out.size() < max_count) {
    auto insn = decode(address + at, bytes.subspan(at));
    if (!insn.ok()) {
      instruction bad;
      bad.address = address + at;
      bad.length = 1;
      bad.text = "(bad)";
      bad.mnemonic = "(bad)";
      bad.kind = flow::interrupt;
      out.push_back(std::move(bad));
      at += 1;
      continue;
    }
    at += insn->length;
    out.push_back(std::move(*insn));
  }
  return out;
}

}  // namespace toolhost::disasm
