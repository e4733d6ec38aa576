// The KD structures as laid out by the public windbgkd.h (AMD64), declared as C structs so the
// compiler computes the offsets. The simulator uses these instead of the backend's offset
// tables on purpose: if either side gets a layout wrong, the tests disagree.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kdsim {

struct KD_PACKET {
  uint32_t PacketLeader;
  uint16_t PacketType;
  uint16_t ByteCount;
  uint32_t PacketId;
  uint32_t Checksum;
};
static_assert(sizeof(KD_PACKET) == 16);

enum : uint32_t {
  PACKET_LEADER = 0x30303030,
  CONTROL_PACKET_LEADER = 0x69696969,
  INITIAL_PACKET_ID = 0x80800000,
  SYNC_PACKET_ID = 0x00000800,
};
enum : uint8_t { PACKET_TRAILING_BYTE = 0xAA, BREAKIN_PACKET_BYTE = 0x62 };
enum : uint16_t {
  PACKET_TYPE_KD_STATE_MANIPULATE = 2,
  PACKET_TYPE_KD_DEBUG_IO = 3,
  PACKET_TYPE_KD_ACKNOWLEDGE = 4,
  PACKET_TYPE_KD_RESEND = 5,
  PACKET_TYPE_KD_RESET = 6,
  PACKET_TYPE_KD_STATE_CHANGE64 = 7,
  PACKET_TYPE_KD_FILE_IO = 11,
};
constexpr size_t PACKET_MAX_SIZE = 4000;

struct DBGKD_READ_MEMORY64 {
  uint64_t TargetBaseAddress;
  uint32_t TransferCount;
  uint32_t ActualBytesRead;
};
struct DBGKD_WRITE_MEMORY64 {
  uint64_t TargetBaseAddress;
  uint32_t TransferCount;
  uint32_t ActualBytesWritten;
};
struct DBGKD_GET_CONTEXT {
  uint32_t Unused;
};
struct DBGKD_WRITE_BREAKPOINT64 {
  uint64_t BreakPointAddress;
  uint32_t BreakPointHandle;
};
struct DBGKD_RESTORE_BREAKPOINT {
  uint32_t BreakPointHandle;
};
#pragma pack(push, 4)
struct AMD64_DBGKD_CONTROL_SET {
  uint32_t TraceFlag;
  uint64_t Dr7;
  uint64_t CurrentSymbolStart;
  uint64_t CurrentSymbolEnd;
};
#pragma pack(pop)
static_assert(sizeof(AMD64_DBGKD_CONTROL_SET) == 0x1C);
struct DBGKD_CONTINUE2 {
  int32_t ContinueStatus;
  AMD64_DBGKD_CONTROL_SET ControlSet;
};
static_assert(offsetof(DBGKD_CONTINUE2, ControlSet) == 4);
struct DBGKD_GET_VERSION64 {
  uint16_t MajorVersion;
  uint16_t MinorVersion;
  uint8_t ProtocolVersion;
  uint8_t KdSecondaryVersion;
  uint16_t Flags;
  uint16_t MachineType;
  uint8_t MaxPacketType;
  uint8_t MaxStateChange;
  uint8_t MaxManipulate;
  uint8_t Simulation;
  uint16_t Unused[1];
  uint64_t KernBase;
  uint64_t PsLoadedModuleList;
  uint64_t DebuggerDataList;
};
static_assert(sizeof(DBGKD_GET_VERSION64) == 40);
struct DBGKD_READ_WRITE_MSR {
  uint32_t Msr;
  uint32_t DataValueLow;
  uint32_t DataValueHigh;
};
struct DBGKD_CONTEXT_EX {
  uint32_t Offset;
  uint32_t ByteCount;
  uint32_t BytesCopied;
};

struct DBGKD_MANIPULATE_STATE64 {
  uint32_t ApiNumber;
  uint16_t ProcessorLevel;
  uint16_t Processor;
  int32_t ReturnStatus;
  union {
    DBGKD_READ_MEMORY64 ReadMemory;
    DBGKD_WRITE_MEMORY64 WriteMemory;
    DBGKD_GET_CONTEXT GetContext;
    DBGKD_WRITE_BREAKPOINT64 WriteBreakPoint;
    DBGKD_RESTORE_BREAKPOINT RestoreBreakPoint;
    DBGKD_CONTINUE2 Continue2;
    DBGKD_GET_VERSION64 GetVersion64;
    DBGKD_READ_WRITE_MSR ReadWriteMsr;
    DBGKD_CONTEXT_EX ContextEx;
    uint8_t Raw[40];
  } u;
};
static_assert(sizeof(DBGKD_MANIPULATE_STATE64) == 56);
static_assert(offsetof(DBGKD_MANIPULATE_STATE64, u) == 16);

enum : uint32_t {
  DbgKdReadVirtualMemoryApi = 0x3130,
  DbgKdWriteVirtualMemoryApi = 0x3131,
  DbgKdGetContextApi = 0x3132,
  DbgKdWriteBreakPointApi = 0x3134,
  DbgKdRestoreBreakPointApi = 0x3135,
  DbgKdReadControlSpaceApi = 0x3137,
  DbgKdWriteControlSpaceApi = 0x3138,
  DbgKdRebootApi = 0x313B,
  DbgKdContinueApi2 = 0x313C,
  DbgKdReadPhysicalMemoryApi = 0x313D,
  DbgKdWritePhysicalMemoryApi = 0x313E,
  DbgKdGetVersionApi = 0x3146,
  DbgKdCauseBugCheckApi = 0x3149,
  DbgKdSwitchProcessor = 0x3150,
  DbgKdReadMachineSpecificRegister = 0x3152,
  DbgKdWriteMachineSpecificRegister = 0x3153,
  DbgKdSetContextExApi = 0x3160,
};

struct EXCEPTION_RECORD64 {
  int32_t ExceptionCode;
  uint32_t ExceptionFlags;
  uint64_t ExceptionRecord;
  uint64_t ExceptionAddress;
  uint32_t NumberParameters;
  uint32_t UnusedAlignment;
  uint64_t ExceptionInformation[15];
};
struct DBGKM_EXCEPTION64 {
  EXCEPTION_RECORD64 ExceptionRecord;
  uint32_t FirstChance;
};
struct DBGKD_LOAD_SYMBOLS64 {
  uint32_t PathNameLength;
  uint64_t BaseOfDll;
  uint64_t ProcessId;
  uint32_t CheckSum;
  uint32_t SizeOfImage;
  uint8_t UnloadSymbols;
};
struct AMD64_DBGKD_CONTROL_REPORT {
  uint64_t Dr6;
  uint64_t Dr7;
  uint32_t EFlags;
  uint16_t InstructionCount;
  uint16_t ReportFlags;
  uint8_t InstructionStream[16];
  uint16_t SegCs;
  uint16_t SegDs;
  uint16_t SegEs;
  uint16_t SegFs;
};
struct DBGKD_ANY_WAIT_STATE_CHANGE {
  uint32_t NewState;
  uint16_t ProcessorLevel;
  uint16_t Processor;
  uint32_t NumberProcessors;
  uint64_t Thread;
  uint64_t ProgramCounter;
  union {
    DBGKM_EXCEPTION64 Exception;
    DBGKD_LOAD_SYMBOLS64 LoadSymbols;
  } u;
  AMD64_DBGKD_CONTROL_REPORT ControlReport;
};
static_assert(offsetof(DBGKD_ANY_WAIT_STATE_CHANGE, u) == 32);
static_assert(offsetof(DBGKD_ANY_WAIT_STATE_CHANGE, ControlReport) == 192);
enum : uint32_t {
  DbgKdExceptionStateChange = 0x3030,
  DbgKdLoadSymbolsStateChange = 0x3031,
};

struct DBGKD_DEBUG_IO {
  uint32_t ApiNumber;
  uint16_t ProcessorLevel;
  uint16_t Processor;
  union {
    struct {
      uint32_t LengthOfString;
    } PrintString;
    struct {
      uint32_t LengthOfPromptString;
      uint32_t LengthOfStringRead;
    } GetString;
  } u;
};
static_assert(sizeof(DBGKD_DEBUG_IO) == 16);
enum : uint32_t { DbgKdPrintStringApi = 0x3230 };

struct CONTEXT {
  uint64_t P1Home, P2Home, P3Home, P4Home, P5Home, P6Home;
  uint32_t ContextFlags;
  uint32_t MxCsr;
  uint16_t SegCs, SegDs, SegEs, SegFs, SegGs, SegSs;
  uint32_t EFlags;
  uint64_t Dr0, Dr1, Dr2, Dr3, Dr6, Dr7;
  uint64_t Rax, Rcx, Rdx, Rbx, Rsp, Rbp, Rsi, Rdi;
  uint64_t R8, R9, R10, R11, R12, R13, R14, R15;
  uint64_t Rip;
  uint8_t FltSave[512];
  uint8_t VectorRegister[26 * 16];
  uint64_t VectorControl;
  uint64_t DebugControl, LastBranchToRip, LastBranchFromRip, LastExceptionToRip, LastExceptionFromRip;
};
static_assert(sizeof(CONTEXT) == 0x4D0);
static_assert(offsetof(CONTEXT, Rip) == 0xF8);

struct KDESCRIPTOR {
  uint16_t Pad[3];
  uint16_t Limit;
  uint64_t Base;
};
struct KSPECIAL_REGISTERS {
  uint64_t Cr0, Cr2, Cr3, Cr4;
  uint64_t KernelDr0, KernelDr1, KernelDr2, KernelDr3, KernelDr6, KernelDr7;
  KDESCRIPTOR Gdtr, Idtr;
  uint16_t Tr, Ldtr;
  uint32_t MxCsr;
  uint64_t DebugControl, LastBranchToRip, LastBranchFromRip, LastExceptionToRip, LastExceptionFromRip;
  uint64_t Cr8, MsrGsBase, MsrGsSwap, MsrStar, MsrLStar, MsrCStar, MsrSyscallMask, Xcr0, MsrFsBase;
  uint64_t SpecialPadding0;
};
static_assert(sizeof(KSPECIAL_REGISTERS) == 0xF0);

enum : uint32_t {
  STATUS_SUCCESS = 0,
  STATUS_UNSUCCESSFUL = 0xC0000001,
  STATUS_NO_SUCH_DEVICE = 0xC000000E,
  STATUS_BREAKPOINT = 0x80000003,
  STATUS_SINGLE_STEP = 0x80000004,
  STATUS_ILLEGAL_INSTRUCTION = 0xC000001D,
};

// The status argument of DbgBreakPointWithStatus (ReactOS ndk/kdtypes.h).
enum : uint64_t {
  DBG_STATUS_CONTROL_C = 1,
  DBG_STATUS_BUGCHECK_FIRST = 3,
};

}  // namespace kdsim
