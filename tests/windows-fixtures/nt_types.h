/* Windows 10 19041 (2004..22H2) x64 kernel structures, as far as a debugger reads them, with
 * the offsets of ../shared windows-guest.md §4 forced by reserved gaps and checked below. Their
 * names and member names are Windows'; the reserved gaps (`Reserved0x...`) stand for members
 * nothing here fills. One header for both kernels built from it: the symbol tests' image
 * (ntfix.c here) and the Windows-shaped QEMU guest (tests/guest/windows/ntoskrnl.c).
 * Freestanding C for clang-cl (LLP64: ULONG is 32 bits), no Windows headers. */
#ifndef TOOLHOST_NT_TYPES_H
#define TOOLHOST_NT_TYPES_H

typedef unsigned char UCHAR;
typedef char CHAR;
typedef unsigned short USHORT;
typedef short SHORT;
typedef unsigned long ULONG;
typedef long LONG;
typedef unsigned long long ULONG64;
typedef long long LONG64;
typedef ULONG64 ULONGLONG;
typedef LONG64 LONGLONG;
typedef unsigned char BOOLEAN;
typedef __wchar_t WCHAR;
typedef void VOID;
typedef void* PVOID;

#define WG_CAT(a, b) a##b
/* A gap from offset `from` to offset `to` (hex literals), named after where it starts. */
#define GAP(from, to) UCHAR WG_CAT(Reserved, from)[(to) - (from)]
#define AT(type, member, offset) _Static_assert(__builtin_offsetof(type, member) == (offset), #type "." #member)
#define SIZE(type, size) _Static_assert(sizeof(type) == (size), "sizeof " #type)

typedef struct _LIST_ENTRY {
  struct _LIST_ENTRY* Flink;
  struct _LIST_ENTRY* Blink;
} LIST_ENTRY, *PLIST_ENTRY;

typedef struct LIST_ENTRY64 {
  ULONG64 Flink;
  ULONG64 Blink;
} LIST_ENTRY64;

typedef struct _UNICODE_STRING {
  USHORT Length;
  USHORT MaximumLength;
  WCHAR* Buffer;
} UNICODE_STRING;
SIZE(UNICODE_STRING, 0x10);

typedef struct _CLIENT_ID {
  VOID* UniqueProcess;
  VOID* UniqueThread;
} CLIENT_ID;

typedef union _LARGE_INTEGER {
  struct {
    ULONG LowPart;
    LONG HighPart;
  };
  LONG64 QuadPart;
} LARGE_INTEGER;

typedef struct _EX_FAST_REF {
  union {
    VOID* Object;
    ULONG64 RefCnt : 4;
    ULONG64 Value;
  };
} EX_FAST_REF;

typedef struct _DISPATCHER_HEADER {
  union {
    LONG Lock;
    struct {
      UCHAR Type;
      UCHAR Signalling;
      UCHAR Size;
      UCHAR Reserved1;
    };
  };
  LONG SignalState;
  LIST_ENTRY WaitListHead;
} DISPATCHER_HEADER;
SIZE(DISPATCHER_HEADER, 0x18);

enum _KOBJECTS { ProcessObject = 3, ThreadObject = 6 };

typedef enum _KTHREAD_STATE {
  Initialized = 0,
  Ready = 1,
  Running = 2,
  Standby = 3,
  Terminated = 4,
  Waiting = 5,
  Transition = 6,
  DeferredReady = 7,
  GateWaitObsolete = 8,
  WaitingForProcessInSwap = 9
} KTHREAD_STATE;

typedef enum _KWAIT_REASON {
  Executive = 0,
  FreePage = 1,
  PageIn = 2,
  PoolAllocation = 3,
  DelayExecution = 4,
  Suspended = 5,
  UserRequest = 6,
  WrExecutive = 7,
  WrQueue = 15,
  WrLpcReceive = 16
} KWAIT_REASON;

typedef struct _KPROCESS {
  DISPATCHER_HEADER Header;
  LIST_ENTRY ProfileListHead;
  ULONG64 DirectoryTableBase;
  LIST_ENTRY ThreadListHead;
  GAP(0x040, 0x348);
  ULONG64 StackCount;
  LIST_ENTRY ProcessListEntry;
  GAP(0x360, 0x388);
  ULONG64 UserDirectoryTableBase;
  GAP(0x390, 0x438);
} KPROCESS;
AT(KPROCESS, DirectoryTableBase, 0x28);
AT(KPROCESS, ThreadListHead, 0x30);
AT(KPROCESS, StackCount, 0x348);
AT(KPROCESS, ProcessListEntry, 0x350);
AT(KPROCESS, UserDirectoryTableBase, 0x388);
SIZE(KPROCESS, 0x438);

typedef struct _HANDLE_TABLE {
  ULONG NextHandleNeedingPool;
  LONG ExtraInfoPages;
  ULONG64 TableCode;
  struct _EPROCESS* QuotaProcess;
  LIST_ENTRY HandleTableList;
  ULONG UniqueProcessId;
  GAP(0x2c, 0x80);
} HANDLE_TABLE;
AT(HANDLE_TABLE, UniqueProcessId, 0x28);
SIZE(HANDLE_TABLE, 0x80);

typedef struct _MM_SESSION_SPACE {
  LONG ReferenceCount;
  ULONG u;
  ULONG SessionId;
  GAP(0xc, 0x40);
} MM_SESSION_SPACE;

typedef struct _PEB_LDR_DATA {
  ULONG Length;
  UCHAR Initialized;
  VOID* SsHandle;
  LIST_ENTRY InLoadOrderModuleList;
  LIST_ENTRY InMemoryOrderModuleList;
  LIST_ENTRY InInitializationOrderModuleList;
  VOID* EntryInProgress;
  UCHAR ShutdownInProgress;
  VOID* ShutdownThreadId;
} PEB_LDR_DATA;
AT(PEB_LDR_DATA, InLoadOrderModuleList, 0x10);
SIZE(PEB_LDR_DATA, 0x58);

typedef struct _PEB {
  UCHAR InheritedAddressSpace;
  UCHAR ReadImageFileExecOptions;
  UCHAR BeingDebugged;
  UCHAR BitField;
  UCHAR Padding0[4];
  VOID* Mutant;
  VOID* ImageBaseAddress;
  PEB_LDR_DATA* Ldr;
  VOID* ProcessParameters;
  GAP(0x028, 0x118);
  ULONG OSMajorVersion;
  ULONG OSMinorVersion;
  USHORT OSBuildNumber;
  USHORT OSCSDVersion;
  ULONG OSPlatformId;
  GAP(0x128, 0x2c0);
  ULONG SessionId;
  GAP(0x2c4, 0x7c8);
} PEB;
AT(PEB, ImageBaseAddress, 0x10);
AT(PEB, Ldr, 0x18);
AT(PEB, OSBuildNumber, 0x120);
AT(PEB, SessionId, 0x2c0);
SIZE(PEB, 0x7c8);

typedef struct _EPROCESS {
  KPROCESS Pcb;
  ULONG64 ProcessLock;
  VOID* UniqueProcessId;
  LIST_ENTRY ActiveProcessLinks;
  ULONG64 RundownProtect;
  union {
    ULONG Flags2;
    struct {
      ULONG JobNotReallyActive : 1;
      ULONG AccountingFolded : 1;
      ULONG NewProcessReported : 1;
      ULONG ExitProcessReported : 1;
      ULONG ReportCommitChanges : 1;
      ULONG LastReportMemory : 1;
      ULONG ForceWakeCharge : 1;
      ULONG CrossSessionCreate : 1;
      ULONG NeedsHandleRundown : 1;
      ULONG RefTraceEnabled : 1;
      ULONG PicoCreated : 1;
      ULONG EmptyJobEvaluated : 1;
      ULONG DefaultPagePriority : 3;
      ULONG PrimaryTokenFrozen : 1;
      ULONG ProcessVerifierTarget : 1;
      ULONG RestrictSetThreadContext : 1;
      ULONG AffinityPermanent : 1;
      ULONG AffinityUpdateEnable : 1;
      ULONG PropagateNode : 1;
      ULONG ExplicitAffinity : 1;
      ULONG ProcessExecutionState : 2;
      ULONG EnableReadVmLogging : 1;
      ULONG EnableWriteVmLogging : 1;
      ULONG FatalAccessTerminationRequested : 1;
      ULONG DisableSystemAllowedCpuSet : 1;
      ULONG ProcessStateChangeRequest : 2;
      ULONG ProcessStateChangeInProgress : 1;
      ULONG InPrivate : 1;
    };
  };
  ULONG Flags;
  LARGE_INTEGER CreateTime;
  GAP(0x470, 0x498);
  ULONG64 VirtualSize;
  LIST_ENTRY SessionProcessLinks;
  GAP(0x4b0, 0x4b8);
  EX_FAST_REF Token;
  GAP(0x4c0, 0x510);
  VOID* Job;
  GAP(0x518, 0x540);
  VOID* InheritedFromUniqueProcessId;
  GAP(0x548, 0x550);
  PEB* Peb;
  MM_SESSION_SPACE* Session;
  GAP(0x560, 0x570);
  HANDLE_TABLE* ObjectTable;
  VOID* DebugPort;
  VOID* WoW64Process;
  GAP(0x588, 0x5a0);
  VOID* ImageFilePointer;
  UCHAR ImageFileName[15];
  UCHAR PriorityClass;
  GAP(0x5b8, 0x5e0);
  LIST_ENTRY ThreadListHead;
  ULONG ActiveThreads;
  GAP(0x5f4, 0x7d4);
  LONG ExitStatus;
  VOID* VadRoot;
  GAP(0x7e0, 0x7e8);
  ULONG64 VadCount;
  GAP(0x7f0, 0x840);
  LARGE_INTEGER ExitTime;
  GAP(0x848, 0x87a);
  UCHAR Protection;
  GAP(0x87b, 0xa40);
} EPROCESS;
AT(EPROCESS, UniqueProcessId, 0x440);
AT(EPROCESS, ActiveProcessLinks, 0x448);
AT(EPROCESS, Flags2, 0x460);
AT(EPROCESS, CreateTime, 0x468);
AT(EPROCESS, Token, 0x4b8);
AT(EPROCESS, InheritedFromUniqueProcessId, 0x540);
AT(EPROCESS, Peb, 0x550);
AT(EPROCESS, Session, 0x558);
AT(EPROCESS, ObjectTable, 0x570);
AT(EPROCESS, ImageFileName, 0x5a8);
AT(EPROCESS, PriorityClass, 0x5b7);
AT(EPROCESS, ThreadListHead, 0x5e0);
AT(EPROCESS, ActiveThreads, 0x5f0);
AT(EPROCESS, VadRoot, 0x7d8);
AT(EPROCESS, ExitStatus, 0x7d4);
AT(EPROCESS, ExitTime, 0x840);
AT(EPROCESS, Protection, 0x87a);
SIZE(EPROCESS, 0xa40);

typedef struct _KAPC_STATE {
  LIST_ENTRY ApcListHead[2];
  KPROCESS* Process;
  UCHAR InProgressFlags;
  UCHAR KernelApcPending;
  UCHAR UserApcPendingAll;
  GAP(0x2b, 0x30);
} KAPC_STATE;
SIZE(KAPC_STATE, 0x30);

typedef struct _KTHREAD {
  DISPATCHER_HEADER Header;
  VOID* SListFaultAddress;
  ULONG64 QuantumTarget;
  VOID* InitialStack;
  VOID* StackLimit;
  VOID* StackBase;
  ULONG64 ThreadLock;
  ULONG64 CycleTime;
  ULONG CurrentRunTime;
  ULONG ExpectedRunTime;
  VOID* KernelStack;
  VOID* StateSaveArea;
  VOID* SchedulingGroup;
  UCHAR WaitRegister;
  UCHAR Running;
  UCHAR Alerted[2];
  ULONG MiscFlags;
  union {
    ULONG ThreadFlags;
    struct {
      ULONG ThreadFlagsSpare : 17;
      ULONG KernelStackResident : 1;
      ULONG ThreadFlagsRest : 14;
    };
  };
  GAP(0x07c, 0x090);
  VOID* TrapFrame;
  union {
    KAPC_STATE ApcState;
    struct {
      UCHAR ApcStateFill[0x2b];
      CHAR Priority;
      ULONG UserIdealProcessor;
    };
  };
  LONG64 WaitStatus;
  VOID* WaitBlockList;
  GAP(0x0d8, 0x0f0);
  VOID* Teb;
  GAP(0x0f8, 0x184);
  UCHAR State;
  CHAR Spare13;
  UCHAR WaitIrql;
  CHAR WaitMode;
  GAP(0x188, 0x1c8);
  VOID* Win32Thread;
  GAP(0x1d0, 0x220);
  KPROCESS* Process;
  GAP(0x228, 0x232);
  CHAR PreviousMode;
  CHAR BasePriority;
  GAP(0x234, 0x283);
  UCHAR WaitReason;
  GAP(0x284, 0x28c);
  ULONG KernelTime;
  GAP(0x290, 0x2dc);
  ULONG UserTime;
  GAP(0x2e0, 0x2f8);
  LIST_ENTRY ThreadListEntry;
  GAP(0x308, 0x430);
} KTHREAD;
AT(KTHREAD, InitialStack, 0x28);
AT(KTHREAD, StackLimit, 0x30);
AT(KTHREAD, StackBase, 0x38);
AT(KTHREAD, KernelStack, 0x58);
AT(KTHREAD, MiscFlags, 0x74);
AT(KTHREAD, ThreadFlags, 0x78);
AT(KTHREAD, TrapFrame, 0x90);
AT(KTHREAD, ApcState, 0x98);
AT(KTHREAD, ApcState.Process, 0xb8);
AT(KTHREAD, Priority, 0xc3);
AT(KTHREAD, WaitBlockList, 0xd0);
AT(KTHREAD, Teb, 0xf0);
AT(KTHREAD, State, 0x184);
AT(KTHREAD, WaitIrql, 0x186);
AT(KTHREAD, WaitMode, 0x187);
AT(KTHREAD, Win32Thread, 0x1c8);
AT(KTHREAD, Process, 0x220);
AT(KTHREAD, PreviousMode, 0x232);
AT(KTHREAD, BasePriority, 0x233);
AT(KTHREAD, WaitReason, 0x283);
AT(KTHREAD, KernelTime, 0x28c);
AT(KTHREAD, UserTime, 0x2dc);
AT(KTHREAD, ThreadListEntry, 0x2f8);
SIZE(KTHREAD, 0x430);

typedef struct _ETHREAD {
  KTHREAD Tcb;
  LARGE_INTEGER CreateTime;
  GAP(0x438, 0x450);
  VOID* StartAddress;
  GAP(0x458, 0x478);
  CLIENT_ID Cid;
  GAP(0x488, 0x4b0);
  LIST_ENTRY IrpList;
  GAP(0x4c0, 0x4d0);
  VOID* Win32StartAddress;
  GAP(0x4d8, 0x4e8);
  LIST_ENTRY ThreadListEntry;
  GAP(0x4f8, 0x510);
  ULONG CrossThreadFlags;
  GAP(0x514, 0x898);
} ETHREAD;
AT(ETHREAD, CreateTime, 0x430);
AT(ETHREAD, StartAddress, 0x450);
AT(ETHREAD, Cid, 0x478);
AT(ETHREAD, IrpList, 0x4b0);
AT(ETHREAD, Win32StartAddress, 0x4d0);
AT(ETHREAD, ThreadListEntry, 0x4e8);
AT(ETHREAD, CrossThreadFlags, 0x510);
SIZE(ETHREAD, 0x898);

typedef struct _KLDR_DATA_TABLE_ENTRY {
  LIST_ENTRY InLoadOrderLinks;
  VOID* ExceptionTable;
  ULONG ExceptionTableSize;
  VOID* GpValue;
  VOID* NonPagedDebugInfo;
  VOID* DllBase;
  VOID* EntryPoint;
  ULONG SizeOfImage;
  UNICODE_STRING FullDllName;
  UNICODE_STRING BaseDllName;
  ULONG Flags;
  USHORT LoadCount;
  USHORT SignatureInfo;
  VOID* SectionPointer;
  ULONG CheckSum;
  ULONG CoverageSectionSize;
  VOID* CoverageSection;
  VOID* LoadedImports;
  VOID* Spare;
  ULONG SizeOfImageNotRounded;
  ULONG TimeDateStamp;
} KLDR_DATA_TABLE_ENTRY;
AT(KLDR_DATA_TABLE_ENTRY, ExceptionTable, 0x10);
AT(KLDR_DATA_TABLE_ENTRY, ExceptionTableSize, 0x18);
AT(KLDR_DATA_TABLE_ENTRY, NonPagedDebugInfo, 0x28);
AT(KLDR_DATA_TABLE_ENTRY, DllBase, 0x30);
AT(KLDR_DATA_TABLE_ENTRY, EntryPoint, 0x38);
AT(KLDR_DATA_TABLE_ENTRY, SizeOfImage, 0x40);
AT(KLDR_DATA_TABLE_ENTRY, FullDllName, 0x48);
AT(KLDR_DATA_TABLE_ENTRY, BaseDllName, 0x58);
AT(KLDR_DATA_TABLE_ENTRY, Flags, 0x68);
AT(KLDR_DATA_TABLE_ENTRY, LoadCount, 0x6c);
AT(KLDR_DATA_TABLE_ENTRY, SectionPointer, 0x70);
AT(KLDR_DATA_TABLE_ENTRY, CheckSum, 0x78);
AT(KLDR_DATA_TABLE_ENTRY, SizeOfImageNotRounded, 0x98);
AT(KLDR_DATA_TABLE_ENTRY, TimeDateStamp, 0x9c);
SIZE(KLDR_DATA_TABLE_ENTRY, 0xa0);

typedef struct _LDR_DATA_TABLE_ENTRY {
  LIST_ENTRY InLoadOrderLinks;
  LIST_ENTRY InMemoryOrderLinks;
  LIST_ENTRY InInitializationOrderLinks;
  VOID* DllBase;
  VOID* EntryPoint;
  ULONG SizeOfImage;
  UNICODE_STRING FullDllName;
  UNICODE_STRING BaseDllName;
  ULONG Flags;
  USHORT ObsoleteLoadCount;
  USHORT TlsIndex;
  LIST_ENTRY HashLinks;
  ULONG TimeDateStamp;
  GAP(0x84, 0x120);
} LDR_DATA_TABLE_ENTRY;
AT(LDR_DATA_TABLE_ENTRY, DllBase, 0x30);
AT(LDR_DATA_TABLE_ENTRY, SizeOfImage, 0x40);
AT(LDR_DATA_TABLE_ENTRY, BaseDllName, 0x58);
AT(LDR_DATA_TABLE_ENTRY, HashLinks, 0x70);
AT(LDR_DATA_TABLE_ENTRY, TimeDateStamp, 0x80);
SIZE(LDR_DATA_TABLE_ENTRY, 0x120);

typedef struct _KSYSTEM_TIME {
  ULONG LowPart;
  LONG High1Time;
  LONG High2Time;
} KSYSTEM_TIME;

typedef struct _KUSER_SHARED_DATA {
  ULONG TickCountLowDeprecated;
  ULONG TickCountMultiplier;
  KSYSTEM_TIME InterruptTime;
  KSYSTEM_TIME SystemTime;
  KSYSTEM_TIME TimeZoneBias;
  USHORT ImageNumberLow;
  USHORT ImageNumberHigh;
  WCHAR NtSystemRoot[260];
  GAP(0x238, 0x260);
  ULONG NtBuildNumber;
  ULONG NtProductType;
  UCHAR ProductTypeIsValid;
  UCHAR Reserved0[1];
  USHORT NativeProcessorArchitecture;
  ULONG NtMajorVersion;
  ULONG NtMinorVersion;
  UCHAR ProcessorFeatures[64];
  GAP(0x2b4, 0x2d0);
  ULONG SuiteMask;
  UCHAR KdDebuggerEnabled;
  GAP(0x2d5, 0x320);
  union {
    KSYSTEM_TIME TickCount;
    ULONG64 TickCountQuad;
  };
  GAP(0x32c, 0x720);
} KUSER_SHARED_DATA;
AT(KUSER_SHARED_DATA, InterruptTime, 0x8);
AT(KUSER_SHARED_DATA, SystemTime, 0x14);
AT(KUSER_SHARED_DATA, ImageNumberLow, 0x2c);
AT(KUSER_SHARED_DATA, NtSystemRoot, 0x30);
AT(KUSER_SHARED_DATA, NtBuildNumber, 0x260);
AT(KUSER_SHARED_DATA, NtProductType, 0x264);
AT(KUSER_SHARED_DATA, NativeProcessorArchitecture, 0x26a);
AT(KUSER_SHARED_DATA, NtMajorVersion, 0x26c);
AT(KUSER_SHARED_DATA, NtMinorVersion, 0x270);
AT(KUSER_SHARED_DATA, SuiteMask, 0x2d0);
AT(KUSER_SHARED_DATA, KdDebuggerEnabled, 0x2d4);
AT(KUSER_SHARED_DATA, TickCount, 0x320);

typedef struct _KPRCB {
  ULONG MxCsr;
  UCHAR LegacyNumber;
  UCHAR ReservedMustBeZero;
  UCHAR InterruptRequest;
  UCHAR IdleHalt;
  struct _KTHREAD* CurrentThread;
  struct _KTHREAD* NextThread;
  struct _KTHREAD* IdleThread;
  UCHAR NestingLevel;
  UCHAR ClockOwner;
  UCHAR PendingTickFlags;
  UCHAR IdleState;
  ULONG Number;
  GAP(0x028, 0x100);
} KPRCB;
AT(KPRCB, CurrentThread, 0x8);
AT(KPRCB, Number, 0x24);

typedef struct _KPCR {
  VOID* GdtBase;
  VOID* TssBase;
  ULONG64 UserRsp;
  struct _KPCR* Self;
  KPRCB* CurrentPrcb;
  GAP(0x028, 0x038);
  VOID* IdtBase;
  GAP(0x040, 0x050);
  UCHAR Irql;
  GAP(0x051, 0x060);
  USHORT MajorVersion;
  USHORT MinorVersion;
  GAP(0x064, 0x108);
  VOID* KdVersionBlock;
  GAP(0x110, 0x180);
  KPRCB Prcb;
} KPCR;
AT(KPCR, Self, 0x18);
AT(KPCR, CurrentPrcb, 0x20);
AT(KPCR, KdVersionBlock, 0x108);
AT(KPCR, Prcb, 0x180);
AT(KPCR, Prcb.CurrentThread, 0x188);

/* The KD debugger data block (wdbgexts.h's KDDEBUGGER_DATA64), through SizeEThread. */
typedef struct _DBGKD_DEBUG_DATA_HEADER64 {
  LIST_ENTRY64 List;
  ULONG OwnerTag;
  ULONG Size;
} DBGKD_DEBUG_DATA_HEADER64;

typedef struct _KDDEBUGGER_DATA64 {
  DBGKD_DEBUG_DATA_HEADER64 Header;
  ULONG64 KernBase;
  ULONG64 BreakpointWithStatus;
  ULONG64 SavedContext;
  USHORT ThCallbackStack;
  USHORT NextCallback;
  USHORT FramePointer;
  USHORT PaeEnabled;
  ULONG64 KiCallUserMode;
  ULONG64 KeUserCallbackDispatcher;
  ULONG64 PsLoadedModuleList;
  ULONG64 PsActiveProcessHead;
  ULONG64 PspCidTable;
  GAP(0x060, 0x218);
  ULONG64 KiProcessorBlock;
  GAP(0x220, 0x290);
  ULONG64 MmVirtualTranslationBase;
  USHORT OffsetKThreadNextProcessor;
  USHORT OffsetKThreadTeb;
  USHORT OffsetKThreadKernelStack;
  USHORT OffsetKThreadInitialStack;
  USHORT OffsetKThreadApcProcess;
  USHORT OffsetKThreadState;
  USHORT OffsetKThreadBStore;
  USHORT OffsetKThreadBStoreLimit;
  USHORT SizeEProcess;
  USHORT OffsetEprocessPeb;
  USHORT OffsetEprocessParentCID;
  USHORT OffsetEprocessDirectoryTableBase;
  USHORT SizePrcb;
  USHORT OffsetPrcbDpcRoutine;
  USHORT OffsetPrcbCurrentThread;
  USHORT OffsetPrcbMhz;
  USHORT OffsetPrcbCpuType;
  USHORT OffsetPrcbVendorString;
  USHORT OffsetPrcbProcStateContext;
  USHORT OffsetPrcbNumber;
  USHORT SizeEThread;
  GAP(0x2c2, 0x368);
} KDDEBUGGER_DATA64;
AT(KDDEBUGGER_DATA64, Header.OwnerTag, 0x10);
AT(KDDEBUGGER_DATA64, Header.Size, 0x14);
AT(KDDEBUGGER_DATA64, KernBase, 0x18);
AT(KDDEBUGGER_DATA64, KiCallUserMode, 0x38);
AT(KDDEBUGGER_DATA64, PsLoadedModuleList, 0x48);
AT(KDDEBUGGER_DATA64, PsActiveProcessHead, 0x50);
AT(KDDEBUGGER_DATA64, PspCidTable, 0x58);
AT(KDDEBUGGER_DATA64, KiProcessorBlock, 0x218);
AT(KDDEBUGGER_DATA64, OffsetKThreadNextProcessor, 0x298);
AT(KDDEBUGGER_DATA64, SizeEThread, 0x2c0);
SIZE(KDDEBUGGER_DATA64, 0x368);

/* DBGKD_GET_VERSION64: what KD's GetVersion returns (KPCR.KdVersionBlock points at it). */
typedef struct _DBGKD_GET_VERSION64 {
  USHORT MajorVersion;
  USHORT MinorVersion;
  UCHAR ProtocolVersion;
  UCHAR KdSecondaryVersion;
  USHORT Flags;
  USHORT MachineType;
  UCHAR MaxPacketType;
  UCHAR MaxStateChange;
  UCHAR MaxManipulate;
  UCHAR Simulation;
  USHORT Unused[1];
  ULONG64 KernBase;
  ULONG64 PsLoadedModuleList;
  ULONG64 DebuggerDataList;
} DBGKD_GET_VERSION64;
AT(DBGKD_GET_VERSION64, KernBase, 0x10);
AT(DBGKD_GET_VERSION64, DebuggerDataList, 0x20);

#endif
