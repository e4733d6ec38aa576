// toolhost::disasm: decoding x86 machine code one instruction at a time (Zydis 4).
//
//   toolhost::disasm::decoder d(toolhost::disasm::mode::x86_64);
//   auto insn = d.decode(0x401000, bytes);           // bytes start at 0x401000
//   if (insn.ok() && insn->is_call() && insn->target) ...;
//
// A decoder is immutable after construction and may be used from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::disasm {

enum class mode { x86_64, x86_32, x86_16 };

// How an instruction changes the flow of control.
enum class flow {
  next,              // falls through to the next instruction
  call,              // call (direct or indirect)
  jump,              // unconditional jump
  conditional_jump,  // jcc, loop, jrcxz
  ret,               // ret, iret, sysret
  interrupt,         // int, int3, syscall, ud2, hlt: stops or traps
};

struct instruction {
  uint64_t address = 0;
  uint8_t length = 0;
  std::string text;      // Intel syntax, e.g. "mov rax, qword ptr [rip+0x2fe2]"; branch targets absolute
  std::string mnemonic;  // lowercase, e.g. "call"
  flow kind = flow::next;
  // The absolute target of a direct call or jump (relative or absolute immediate operand).
  std::optional<uint64_t> target;
  // The absolute address a memory operand (or `lea`) refers to when it does not depend on a
  // register: rip-relative ([rip+0x2fe2]) or absolute ([0x804a00c]); fs:/gs: ones excluded.
  std::optional<uint64_t> memory_target;
  // An immediate operand's value (the first one), as `mov edi, 0x401136` loads an address.
  std::optional<uint64_t> immediate;
  // A memory operand relative to one general register and nothing else: the register ("ebx")
  // and the displacement (0xc for [ebx+0xc]). i386 PIC code reaches its GOT this way.
  std::string memory_base;
  int64_t memory_displacement = 0;

  bool is_call() const noexcept { return kind == flow::call; }
  bool is_jump() const noexcept { return kind == flow::jump || kind == flow::conditional_jump; }
  bool is_ret() const noexcept { return kind == flow::ret; }
  // True when execution can continue at address + length.
  bool falls_through() const noexcept {
    return kind == flow::next || kind == flow::call || kind == flow::conditional_jump;
  }
};

// How `instruction::text` writes numbers. The defaults are Zydis's own (0x0000000000401030);
// listings meant for reading (the analysis server's) turn both off (0x401030).
struct text_style {
  bool pad_addresses = true;
  bool uppercase_hex = true;
};

class decoder {
 public:
  explicit decoder(mode m = mode::x86_64, text_style style = {});

  // Decodes the instruction at the start of `bytes`, which sit at virtual address `address`.
  // Fails with InvalidArgument when the bytes are not a valid instruction, OutOfRange when
  // the buffer ends inside one.
  absl::StatusOr<instruction> decode(uint64_t address, std::span<const uint8_t> bytes) const;
  absl::StatusOr<instruction> decode(uint64_t address, const std::string& bytes) const {
    return decode(address, std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }

  // Linear sweep: decodes up to `max_count` instructions from the start of `bytes`. An
  // undecodable byte is skipped (reported as a 1-byte "(bad)" instruction) so the sweep
  // resynchronises.
  std::vector<instruction> decode_all(uint64_t address, std::span<const uint8_t> bytes,
                                      size_t max_count = SIZE_MAX) const;

  mode machine_mode() const noexcept { return mode_; }

 private:
  mode mode_;
  text_style style_;
};

}  // namespace toolhost::disasm
