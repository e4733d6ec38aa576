// Offsets and magic numbers of the 64-bit Windows crash dump header (DUMP_HEADER64) and the
// headers that follow it, as published (kdmp-parser, volatility3 crash64.json, QEMU's
// win_dump_defs.h). All values little-endian.
#pragma once

#include <cstdint>

namespace toolhost::windump::layout {

inline constexpr uint64_t kPageSize = 0x1000;
inline constexpr uint64_t kHeaderSize = 0x2000;

inline constexpr uint32_t kSignature = 0x45474150;    // "PAGE"
inline constexpr uint32_t kValidDump64 = 0x34365544;  // "DU64"
inline constexpr uint32_t kValidDump32 = 0x504d5544;  // "DUMP" (a 32-bit dump)
inline constexpr uint32_t kMachineAmd64 = 0x8664;

// DUMP_HEADER64 fields.
inline constexpr uint64_t kOffSignature = 0x000;
inline constexpr uint64_t kOffValidDump = 0x004;
inline constexpr uint64_t kOffMajorVersion = 0x008;
inline constexpr uint64_t kOffMinorVersion = 0x00c;
inline constexpr uint64_t kOffDirectoryTableBase = 0x010;
inline constexpr uint64_t kOffPfnDatabase = 0x018;
inline constexpr uint64_t kOffPsLoadedModuleList = 0x020;
inline constexpr uint64_t kOffPsActiveProcessHead = 0x028;
inline constexpr uint64_t kOffMachineImageType = 0x030;
inline constexpr uint64_t kOffNumberProcessors = 0x034;
inline constexpr uint64_t kOffBugCheckCode = 0x038;
inline constexpr uint64_t kOffBugCheckParameters = 0x040;  // 4 x u64
inline constexpr uint64_t kOffVersionUser = 0x060;         // 32 bytes
inline constexpr uint64_t kOffKdDebuggerDataBlock = 0x080;
inline constexpr uint64_t kOffPhysicalMemoryBlock = 0x088;  // 700 bytes
inline constexpr uint64_t kPhysicalMemoryBlockSize = 700;
inline constexpr uint64_t kOffContextRecord = 0x348;  // 3000 bytes
inline constexpr uint64_t kOffException = 0xf00;      // EXCEPTION_RECORD64
inline constexpr uint64_t kOffDumpType = 0xf98;
inline constexpr uint64_t kOffRequiredDumpSpace = 0xfa0;
inline constexpr uint64_t kOffSystemTime = 0xfa8;
inline constexpr uint64_t kOffComment = 0xfb0;  // 128 bytes
inline constexpr uint64_t kOffSystemUpTime = 0x1030;

// PHYSICAL_MEMORY_DESCRIPTOR64 inside the header: NumberOfRuns u32, pad, NumberOfPages u64,
// then runs {BasePage u64, PageCount u64}; 700 bytes hold at most 42 runs.
inline constexpr uint64_t kRunsOffset = 0x10;
inline constexpr uint64_t kMaxRuns = (kPhysicalMemoryBlockSize - kRunsOffset) / 16;

// EXCEPTION_RECORD64.
inline constexpr uint64_t kExceptionCode = 0x00;
inline constexpr uint64_t kExceptionAddress = 0x10;

// Dump types.
inline constexpr uint32_t kTypeFull = 1;
inline constexpr uint32_t kTypeBitmap = 5;
inline constexpr uint32_t kTypeLiveKernelBitmap = 6;
inline constexpr uint32_t kTypeKernel = 8;
inline constexpr uint32_t kTypeKernelAndUser = 9;
inline constexpr uint32_t kTypeComplete = 10;

// Bitmap header (types 5, 6) at kHeaderSize.
inline constexpr uint32_t kBmpSignatureS = 0x504d4453;  // "SDMP"
inline constexpr uint32_t kBmpSignatureF = 0x504d4446;  // "FDMP"
inline constexpr uint32_t kBmpValidDump = 0x504d5544;   // "DUMP"
inline constexpr uint64_t kBmpOffFirstPage = 0x20;
inline constexpr uint64_t kBmpOffTotalPresentPages = 0x28;
inline constexpr uint64_t kBmpOffPages = 0x30;
inline constexpr uint64_t kBmpOffBitmap = 0x38;

// RDMP header (types 8, 9, 10) at kHeaderSize: Marker, "RDMP", "DUMP", reserved,
// MetadataSize u64, FirstPageOffset u64, 16 bytes that differ by type (complete:
// NumberOfRanges u32, 2 x u16, TotalNumberOfPages u64), then {PageFileNumber, NumberOfPages}
// ranges. The metadata spans [0x2020, 0x2020 + MetadataSize); pages start right after it.
inline constexpr uint32_t kRdmpMarker = 0x40;
inline constexpr uint32_t kRdmpSignature = 0x504d4452;  // "RDMP"
inline constexpr uint32_t kRdmpValidDump = 0x504d5544;  // "DUMP"
inline constexpr uint64_t kRdmpOffMetadataSize = 0x10;
inline constexpr uint64_t kRdmpOffFirstPageOffset = 0x18;
inline constexpr uint64_t kRdmpOffNumberOfRanges = 0x20;
inline constexpr uint64_t kRdmpOffTotalNumberOfPages = 0x28;
inline constexpr uint64_t kRdmpOffRanges = 0x30;
inline constexpr uint64_t kRdmpMetadataStart = 0x20;

// AMD64 CONTEXT (within ContextRecord).
namespace context {
inline constexpr uint64_t kContextFlags = 0x30;
inline constexpr uint64_t kMxCsr = 0x34;
inline constexpr uint64_t kSegCs = 0x38;
inline constexpr uint64_t kSegDs = 0x3a;
inline constexpr uint64_t kSegEs = 0x3c;
inline constexpr uint64_t kSegFs = 0x3e;
inline constexpr uint64_t kSegGs = 0x40;
inline constexpr uint64_t kSegSs = 0x42;
inline constexpr uint64_t kEFlags = 0x44;
inline constexpr uint64_t kDr0 = 0x48;
inline constexpr uint64_t kRax = 0x78;
inline constexpr uint64_t kRcx = 0x80;
inline constexpr uint64_t kRdx = 0x88;
inline constexpr uint64_t kRbx = 0x90;
inline constexpr uint64_t kRsp = 0x98;
inline constexpr uint64_t kRbp = 0xa0;
inline constexpr uint64_t kRsi = 0xa8;
inline constexpr uint64_t kRdi = 0xb0;
inline constexpr uint64_t kR8 = 0xb8;  // r8..r15 follow, 8 bytes apart
inline constexpr uint64_t kRip = 0xf8;
inline constexpr uint64_t kSize = 0x4d0;
inline constexpr uint32_t kFlagsAmd64Full = 0x10000b;  // CONTEXT_AMD64 | CONTROL | INTEGER | FLOATING_POINT
}  // namespace context

}  // namespace toolhost::windump::layout
