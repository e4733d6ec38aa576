// The register map the KD backends describe: which CONTEXT or KSPECIAL_REGISTERS field (AMD64)
// each register of the debug-target register buffer comes from. The buffer puts every register in
// an 8-byte slot, in this order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "toolhost/kd/protocol.h"

namespace toolhost::kd {

// Where a register of the map comes from.
enum class register_source { context, special };
struct register_slot {
  const char* name;
  uint32_t bits;
  const char* role;
  register_source from;
  size_t offset;  // in the CONTEXT or in KSPECIAL_REGISTERS
};

inline constexpr register_slot kRegisters[] = {
    {"rax", 64, "", register_source::context, 0x78},
    {"rbx", 64, "", register_source::context, 0x90},
    {"rcx", 64, "", register_source::context, 0x80},
    {"rdx", 64, "", register_source::context, 0x88},
    {"rsi", 64, "", register_source::context, 0xA8},
    {"rdi", 64, "", register_source::context, 0xB0},
    {"rbp", 64, "fp", register_source::context, 0xA0},
    {"rsp", 64, "sp", register_source::context, 0x98},
    {"r8", 64, "", register_source::context, 0xB8},
    {"r9", 64, "", register_source::context, 0xC0},
    {"r10", 64, "", register_source::context, 0xC8},
    {"r11", 64, "", register_source::context, 0xD0},
    {"r12", 64, "", register_source::context, 0xD8},
    {"r13", 64, "", register_source::context, 0xE0},
    {"r14", 64, "", register_source::context, 0xE8},
    {"r15", 64, "", register_source::context, 0xF0},
    {"rip", 64, "pc", register_source::context, kContextRip},
    {"eflags", 32, "flags", register_source::context, kContextEflags},
    {"cs", 16, "", register_source::context, 0x38},
    {"ds", 16, "", register_source::context, 0x3A},
    {"es", 16, "", register_source::context, 0x3C},
    {"fs", 16, "", register_source::context, 0x3E},
    {"gs", 16, "", register_source::context, 0x40},
    {"ss", 16, "", register_source::context, 0x42},
    {"dr0", 64, "", register_source::special, 0x20},
    {"dr1", 64, "", register_source::special, 0x28},
    {"dr2", 64, "", register_source::special, 0x30},
    {"dr3", 64, "", register_source::special, 0x38},
    {"dr6", 64, "", register_source::special, 0x40},
    {"dr7", 64, "", register_source::special, 0x48},
    {"cr0", 64, "", register_source::special, kKspecialCr0},
    {"cr2", 64, "", register_source::special, kKspecialCr2},
    {"cr3", 64, "cr3", register_source::special, kKspecialCr3},
    {"cr4", 64, "", register_source::special, kKspecialCr4},
};
inline constexpr size_t kRegisterCount = sizeof(kRegisters) / sizeof(kRegisters[0]);
inline constexpr size_t kRegisterBufferSize = kRegisterCount * 8;

}  // namespace toolhost::kd
