// KD wire constants, written from the public definitions (ReactOS windbgkd.h, kddll): packet
// leaders and types, packet ids, manipulate API numbers, state-change and debug-I/O numbers,
// and the AMD64 structure offsets the host side needs. Host side only; the simulator in
// tests/kd-sim keeps its own copy on purpose.
#pragma once

#include <cstddef>
#include <cstdint>

namespace toolhost::kd {

// ---- KDCOM framing ------------------------------------------------------------------------
inline constexpr uint32_t kDataLeader = 0x30303030;
inline constexpr uint32_t kControlLeader = 0x69696969;
inline constexpr uint8_t kDataLeaderByte = 0x30;
inline constexpr uint8_t kControlLeaderByte = 0x69;
inline constexpr uint8_t kTrailingByte = 0xAA;
inline constexpr uint8_t kBreakInByte = 0x62;
inline constexpr size_t kHeaderSize = 16;
inline constexpr size_t kMaxPayload = 4000;  // PACKET_MAX_SIZE

inline constexpr uint32_t kInitialPacketId = 0x80800000;
inline constexpr uint32_t kSyncPacketId = 0x00000800;

// Packet types.
inline constexpr uint16_t kTypeStateManipulate = 2;
inline constexpr uint16_t kTypeDebugIo = 3;
inline constexpr uint16_t kTypeAcknowledge = 4;
inline constexpr uint16_t kTypeResend = 5;
inline constexpr uint16_t kTypeReset = 6;
inline constexpr uint16_t kTypeStateChange64 = 7;
inline constexpr uint16_t kTypeFileIo = 11;

inline constexpr bool is_data_type(uint16_t t) {
  return t == kTypeStateManipulate || t == kTypeDebugIo || t == kTypeStateChange64 || t == kTypeFileIo;
}
inline constexpr bool is_control_type(uint16_t t) {
  return t == kTypeAcknowledge || t == kTypeResend || t == kTypeReset;
}

// ---- DBGKD_MANIPULATE_STATE64 -------------------------------------------------------------
inline constexpr size_t kManipulateSize = 56;  // header (16) + union (40); bulk data follows
inline constexpr size_t kManipulateUnion = 16;

inline constexpr uint32_t kApiReadVirtual = 0x3130;
inline constexpr uint32_t kApiWriteVirtual = 0x3131;
inline constexpr uint32_t kApiGetContext = 0x3132;
inline constexpr uint32_t kApiWriteBreakPoint = 0x3134;
inline constexpr uint32_t kApiRestoreBreakPoint = 0x3135;
inline constexpr uint32_t kApiReadControlSpace = 0x3137;
inline constexpr uint32_t kApiWriteControlSpace = 0x3138;
inline constexpr uint32_t kApiReboot = 0x313B;
inline constexpr uint32_t kApiContinue2 = 0x313C;
inline constexpr uint32_t kApiReadPhysical = 0x313D;
inline constexpr uint32_t kApiWritePhysical = 0x313E;
inline constexpr uint32_t kApiGetVersion = 0x3146;
inline constexpr uint32_t kApiCauseBugCheck = 0x3149;
inline constexpr uint32_t kApiSwitchProcessor = 0x3150;
inline constexpr uint32_t kApiReadMsr = 0x3152;
inline constexpr uint32_t kApiWriteMsr = 0x3153;
inline constexpr uint32_t kApiSetContextEx = 0x3160;

inline constexpr uint32_t kDbgContinue = 0x00010002;  // DBG_CONTINUE
inline constexpr uint32_t kDbgExceptionNotHandled = 0x80010001;
inline constexpr size_t kSetContextChunk = 512;
inline constexpr uint32_t kAmd64ControlSpaceKspecial = 2;  // control-space "address" of KSPECIAL_REGISTERS

// ---- DBGKD_ANY_WAIT_STATE_CHANGE (64-bit) -------------------------------------------------
inline constexpr uint32_t kStateException = 0x3030;
inline constexpr uint32_t kStateLoadSymbols = 0x3031;
inline constexpr uint32_t kStateCommandString = 0x3032;
inline constexpr size_t kStateChangeUnion = 32;      // exception record / load-symbols
inline constexpr size_t kControlReportOffset = 192;  // AMD64_DBGKD_CONTROL_REPORT
inline constexpr size_t kControlReportStream = 24;   // InstructionStream inside the report
inline constexpr size_t kMaxInstructionStream = 16;  // DBGKD_MAXSTREAM

inline constexpr uint32_t kStatusBreakpoint = 0x80000003;
inline constexpr uint32_t kManuallyInitiatedCrash = 0xE2;  // the bugcheck KdpCauseBugCheck raises
inline constexpr uint32_t kStatusSingleStep = 0x80000004;

// ---- DBGKD_DEBUG_IO -----------------------------------------------------------------------
inline constexpr uint32_t kDebugIoPrintString = 0x3230;
inline constexpr uint32_t kDebugIoGetString = 0x3231;
inline constexpr size_t kDebugIoSize = 16;

// ---- AMD64 CONTEXT and KSPECIAL_REGISTERS offsets -----------------------------------------
inline constexpr size_t kContextSize = 0x4D0;
inline constexpr uint32_t kContextFull = 0x0010001F;  // CONTEXT_AMD64 | control, integer, segments, fp, debug
inline constexpr size_t kContextFlagsOffset = 0x30;
inline constexpr size_t kContextSegCs = 0x38;
inline constexpr size_t kContextEflags = 0x44;
inline constexpr size_t kContextDr0 = 0x48;
inline constexpr size_t kContextRax = 0x78;  // then rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15
inline constexpr size_t kContextRip = 0xF8;
inline constexpr size_t kKspecialReadSize = 0x50;  // Cr0..Cr4 and the kernel Dr0..Dr7: all we use
inline constexpr size_t kKspecialCr0 = 0x00;
inline constexpr size_t kKspecialCr2 = 0x08;
inline constexpr size_t kKspecialCr3 = 0x10;
inline constexpr size_t kKspecialCr4 = 0x18;
inline constexpr size_t kKspecialDr0 = 0x20;  // Dr0..Dr3, Dr6, Dr7 at 8-byte steps
inline constexpr size_t kKspecialDr7 = 0x48;

inline constexpr uint16_t kMachineAmd64 = 0x8664;
inline constexpr uint16_t kMachineArm64 = 0xAA64;

}  // namespace toolhost::kd
