/* Windows 10 x64 19041 (2004 ... 22H2) kernel structures, as far as a debugger reads them, with
 * the real offsets and sizes: members the debugger does not read are padding. Every offset is
 * checked with _Static_assert. Freestanding C: no Windows headers. Used by ntfix.c (the symbol
 * tests' kernel image) and by whatever builds a Windows-shaped guest kernel. */
#ifndef TOOLHOST_NT_TYPES_H
#define TOOLHOST_NT_TYPES_H

typedef unsigned char UCHAR;
typedef char CHAR;
typedef unsigned short USHORT;
typedef short SHORT;
typedef unsigned long ULONG;
typedef long LONG;
typedef unsigned long long ULONGLONG;
typedef long long LONGLONG;
typedef unsigned char BOOLEAN;
typedef void* PVOID;
typedef __wchar_t WCHAR;

#define NT_CHECK(type, field, offset) _Static_assert(__builtin_offsetof(type, field) == (offset), #type "." #field)
#define NT_SIZE(type, size) _Static_assert(sizeof(type) == (size), "sizeof " #type)

typedef struct _LIST_ENTRY {
  struct _LIST_ENTRY* Flink;
  struct _LIST_ENTRY* Blink;
} LIST_ENTRY, *PLIST_ENTRY;

typedef struct _UNICODE_STRING {
  USHORT Length;
  USHORT MaximumLength;
  WCHAR* Buffer;
} UNICODE_STRING;

typedef union _LARGE_INTEGER {
  struct {
    ULONG LowPart;
    LONG HighPart;
  };
  LONGLONG QuadPart;
} LARGE_INTEGER;

typedef struct _CLIENT_ID {
  PVOID UniqueProcess;
  PVOID UniqueThread;
} CLIENT_ID;

typedef union _EX_FAST_REF {
  PVOID Object;
  ULONGLONG RefCnt : 4;
  ULONGLONG Value;
} EX_FAST_REF;

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
  WrExecutive = 7
} KWAIT_REASON;

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
NT_SIZE(DISPATCHER_HEADER, 0x18);

typedef struct _KPROCESS {
  DISPATCHER_HEADER Header;
  LIST_ENTRY ProfileListHead;
  ULONGLONG DirectoryTableBase;
  LIST_ENTRY ThreadListHead;
  UCHAR Pad0[0x348 - 0x40];
  ULONGLONG StackCount;
  LIST_ENTRY ProcessListEntry;
  UCHAR Pad1[0x388 - 0x360];
  ULONGLONG UserDirectoryTableBase;
  UCHAR Pad2[0x438 - 0x390];
} KPROCESS;
NT_CHECK(KPROCESS, DirectoryTableBase, 0x28);
NT_CHECK(KPROCESS, ThreadListHead, 0x30);
NT_CHECK(KPROCESS, UserDirectoryTableBase, 0x388);
NT_SIZE(KPROCESS, 0x438);

typedef struct _HANDLE_TABLE {
  ULONG NextHandleNeedingPool;
  LONG ExtraInfoPages;
  ULONGLONG TableCode;
  struct _EPROCESS* QuotaProcess;
  LIST_ENTRY HandleTableList;
  ULONG UniqueProcessId;
  UCHAR Pad0[0x80 - 0x2c];
} HANDLE_TABLE;
NT_CHECK(HANDLE_TABLE, TableCode, 0x8);
NT_CHECK(HANDLE_TABLE, UniqueProcessId, 0x28);
NT_SIZE(HANDLE_TABLE, 0x80);

typedef struct _PEB_LDR_DATA {
  ULONG Length;
  UCHAR Initialized;
  PVOID SsHandle;
  LIST_ENTRY InLoadOrderModuleList;
  LIST_ENTRY InMemoryOrderModuleList;
  LIST_ENTRY InInitializationOrderModuleList;
  PVOID EntryInProgress;
  UCHAR ShutdownInProgress;
  PVOID ShutdownThreadId;
} PEB_LDR_DATA;
NT_CHECK(PEB_LDR_DATA, InLoadOrderModuleList, 0x10);
NT_SIZE(PEB_LDR_DATA, 0x58);

typedef struct _PEB {
  UCHAR InheritedAddressSpace;
  UCHAR ReadImageFileExecOptions;
  UCHAR BeingDebugged;
  UCHAR BitField;
  UCHAR Padding0[4];
  PVOID Mutant;
  PVOID ImageBaseAddress;
  PEB_LDR_DATA* Ldr;
  PVOID ProcessParameters;
  UCHAR Pad0[0x118 - 0x28];
  ULONG OSMajorVersion;
  ULONG OSMinorVersion;
  USHORT OSBuildNumber;
  USHORT OSCSDVersion;
  ULONG OSPlatformId;
  UCHAR Pad1[0x2c0 - 0x128];
  ULONG SessionId;
  UCHAR Pad2[0x7c8 - 0x2c4];
} PEB;
NT_CHECK(PEB, ImageBaseAddress, 0x10);
NT_CHECK(PEB, Ldr, 0x18);
NT_CHECK(PEB, OSBuildNumber, 0x120);
NT_CHECK(PEB, SessionId, 0x2c0);
NT_SIZE(PEB, 0x7c8);

typedef struct _EPROCESS {
  KPROCESS Pcb;
  ULONGLONG ProcessLock;
  PVOID UniqueProcessId;
  LIST_ENTRY ActiveProcessLinks;
  ULONGLONG RundownProtect;
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
  UCHAR Pad0[0x498 - 0x470];
  ULONGLONG VirtualSize;
  LIST_ENTRY SessionProcessLinks;
  UCHAR Pad1[0x4b8 - 0x4b0];
  EX_FAST_REF Token;
  UCHAR Pad2[0x510 - 0x4c0];
  PVOID Job;
  UCHAR Pad3[0x540 - 0x518];
  PVOID InheritedFromUniqueProcessId;
  UCHAR Pad4[0x550 - 0x548];
  PEB* Peb;
  PVOID Session;
  UCHAR Pad5[0x570 - 0x560];
  HANDLE_TABLE* ObjectTable;
  PVOID DebugPort;
  PVOID WoW64Process;
  UCHAR Pad6[0x5a0 - 0x588];
  PVOID ImageFilePointer;
  UCHAR ImageFileName[15];
  UCHAR PriorityClass;
  UCHAR Pad7[0x5e0 - 0x5b8];
  LIST_ENTRY ThreadListHead;
  ULONG ActiveThreads;
  UCHAR Pad8[0x7d4 - 0x5f4];
  LONG ExitStatus;
  PVOID VadRoot;
  UCHAR Pad9[0x7e8 - 0x7e0];
  ULONGLONG VadCount;
  UCHAR Pad10[0x840 - 0x7f0];
  LARGE_INTEGER ExitTime;
  UCHAR Pad11[0x87a - 0x848];
  UCHAR Protection;
  UCHAR Pad12[0xa40 - 0x87b];
} EPROCESS;
NT_CHECK(EPROCESS, UniqueProcessId, 0x440);
NT_CHECK(EPROCESS, ActiveProcessLinks, 0x448);
NT_CHECK(EPROCESS, Flags2, 0x460);
NT_CHECK(EPROCESS, CreateTime, 0x468);
NT_CHECK(EPROCESS, Token, 0x4b8);
NT_CHECK(EPROCESS, InheritedFromUniqueProcessId, 0x540);
NT_CHECK(EPROCESS, Peb, 0x550);
NT_CHECK(EPROCESS, Session, 0x558);
NT_CHECK(EPROCESS, ObjectTable, 0x570);
NT_CHECK(EPROCESS, ImageFileName, 0x5a8);
NT_CHECK(EPROCESS, PriorityClass, 0x5b7);
NT_CHECK(EPROCESS, ThreadListHead, 0x5e0);
NT_CHECK(EPROCESS, ActiveThreads, 0x5f0);
NT_CHECK(EPROCESS, VadRoot, 0x7d8);
NT_CHECK(EPROCESS, Protection, 0x87a);
NT_SIZE(EPROCESS, 0xa40);

typedef struct _KAPC_STATE {
  LIST_ENTRY ApcListHead[2];
  KPROCESS* Process;
  UCHAR InProgressFlags;
  UCHAR KernelApcPending;
  UCHAR UserApcPendingAll;
  UCHAR Pad[5];
} KAPC_STATE;
NT_SIZE(KAPC_STATE, 0x30);

typedef struct _KTHREAD {
  DISPATCHER_HEADER Header;
  PVOID SListFaultAddress;
  ULONGLONG QuantumTarget;
  PVOID InitialStack;
  PVOID StackLimit;
  PVOID StackBase;
  ULONGLONG ThreadLock;
  ULONGLONG CycleTime;
  ULONG CurrentRunTime;
  ULONG ExpectedRunTime;
  PVOID KernelStack;
  PVOID StateSaveArea;
  PVOID SchedulingGroup;
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
  UCHAR Pad0[0x90 - 0x7c];
  PVOID TrapFrame;
  union {
    KAPC_STATE ApcState;
    struct {
      UCHAR ApcStateFill[43];
      CHAR Priority;
      ULONG UserIdealProcessor;
    };
  };
  UCHAR PadApc[0xd0 - 0xc8];
  PVOID WaitBlockList;
  UCHAR Pad1[0xf0 - 0xd8];
  PVOID Teb;
  UCHAR Pad2[0x184 - 0xf8];
  UCHAR State;
  UCHAR Spare;
  UCHAR WaitIrql;
  CHAR WaitMode;
  UCHAR Pad3[0x1c8 - 0x188];
  PVOID Win32Thread;
  UCHAR Pad4[0x220 - 0x1d0];
  KPROCESS* Process;
  UCHAR Pad5[0x232 - 0x228];
  CHAR PreviousMode;
  CHAR BasePriority;
  UCHAR Pad6[0x283 - 0x234];
  UCHAR WaitReason;
  UCHAR Pad7[0x28c - 0x284];
  ULONG KernelTime;
  UCHAR Pad8[0x2dc - 0x290];
  ULONG UserTime;
  UCHAR Pad9[0x2f8 - 0x2e0];
  LIST_ENTRY ThreadListEntry;
  UCHAR Pad10[0x430 - 0x308];
} KTHREAD;
NT_CHECK(KTHREAD, InitialStack, 0x28);
NT_CHECK(KTHREAD, StackLimit, 0x30);
NT_CHECK(KTHREAD, StackBase, 0x38);
NT_CHECK(KTHREAD, KernelStack, 0x58);
NT_CHECK(KTHREAD, MiscFlags, 0x74);
NT_CHECK(KTHREAD, ThreadFlags, 0x78);
NT_CHECK(KTHREAD, TrapFrame, 0x90);
NT_CHECK(KTHREAD, ApcState, 0x98);
NT_CHECK(KTHREAD, Priority, 0xc3);
NT_CHECK(KTHREAD, WaitBlockList, 0xd0);
NT_CHECK(KTHREAD, Teb, 0xf0);
NT_CHECK(KTHREAD, State, 0x184);
NT_CHECK(KTHREAD, WaitIrql, 0x186);
NT_CHECK(KTHREAD, WaitMode, 0x187);
NT_CHECK(KTHREAD, Win32Thread, 0x1c8);
NT_CHECK(KTHREAD, Process, 0x220);
NT_CHECK(KTHREAD, PreviousMode, 0x232);
NT_CHECK(KTHREAD, BasePriority, 0x233);
NT_CHECK(KTHREAD, WaitReason, 0x283);
NT_CHECK(KTHREAD, KernelTime, 0x28c);
NT_CHECK(KTHREAD, UserTime, 0x2dc);
NT_CHECK(KTHREAD, ThreadListEntry, 0x2f8);
NT_SIZE(KTHREAD, 0x430);

typedef struct _ETHREAD {
  KTHREAD Tcb;
  LARGE_INTEGER CreateTime;
  UCHAR Pad0[0x450 - 0x438];
  PVOID StartAddress;
  UCHAR Pad1[0x478 - 0x458];
  CLIENT_ID Cid;
  UCHAR Pad2[0x4b0 - 0x488];
  LIST_ENTRY IrpList;
  UCHAR Pad3[0x4d0 - 0x4c0];
  PVOID Win32StartAddress;
  UCHAR Pad4[0x4e8 - 0x4d8];
  LIST_ENTRY ThreadListEntry;
  UCHAR Pad5[0x510 - 0x4f8];
  ULONG CrossThreadFlags;
  UCHAR Pad6[0x898 - 0x514];
} ETHREAD;
NT_CHECK(ETHREAD, CreateTime, 0x430);
NT_CHECK(ETHREAD, StartAddress, 0x450);
NT_CHECK(ETHREAD, Cid, 0x478);
NT_CHECK(ETHREAD, IrpList, 0x4b0);
NT_CHECK(ETHREAD, Win32StartAddress, 0x4d0);
NT_CHECK(ETHREAD, ThreadListEntry, 0x4e8);
NT_CHECK(ETHREAD, CrossThreadFlags, 0x510);

typedef struct _KLDR_DATA_TABLE_ENTRY {
  LIST_ENTRY InLoadOrderLinks;
  PVOID ExceptionTable;
  ULONG ExceptionTableSize;
  PVOID GpValue;
  PVOID NonPagedDebugInfo;
  PVOID DllBase;
  PVOID EntryPoint;
  ULONG SizeOfImage;
  UNICODE_STRING FullDllName;
  UNICODE_STRING BaseDllName;
  ULONG Flags;
  USHORT LoadCount;
  USHORT SignatureLevel;
  PVOID SectionPointer;
  ULONG CheckSum;
  ULONG CoverageSectionSize;
  PVOID CoverageSection;
  PVOID LoadedImports;
  PVOID Spare;
  ULONG SizeOfImageNotRounded;
  ULONG TimeDateStamp;
} KLDR_DATA_TABLE_ENTRY;
NT_CHECK(KLDR_DATA_TABLE_ENTRY, ExceptionTable, 0x10);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, NonPagedDebugInfo, 0x28);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, DllBase, 0x30);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, SizeOfImage, 0x40);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, FullDllName, 0x48);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, BaseDllName, 0x58);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, Flags, 0x68);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, SectionPointer, 0x70);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, CheckSum, 0x78);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, SizeOfImageNotRounded, 0x98);
NT_CHECK(KLDR_DATA_TABLE_ENTRY, TimeDateStamp, 0x9c);
NT_SIZE(KLDR_DATA_TABLE_ENTRY, 0xa0);

typedef struct _LDR_DATA_TABLE_ENTRY {
  LIST_ENTRY InLoadOrderLinks;
  LIST_ENTRY InMemoryOrderLinks;
  LIST_ENTRY InInitializationOrderLinks;
  PVOID DllBase;
  PVOID EntryPoint;
  ULONG SizeOfImage;
  UNICODE_STRING FullDllName;
  UNICODE_STRING BaseDllName;
  ULONG Flags;
  USHORT ObsoleteLoadCount;
  USHORT TlsIndex;
  LIST_ENTRY HashLinks;
  ULONG TimeDateStamp;
  UCHAR Pad0[0x120 - 0x84];
} LDR_DATA_TABLE_ENTRY;
NT_CHECK(LDR_DATA_TABLE_ENTRY, DllBase, 0x30);
NT_CHECK(LDR_DATA_TABLE_ENTRY, SizeOfImage, 0x40);
NT_CHECK(LDR_DATA_TABLE_ENTRY, BaseDllName, 0x58);
NT_CHECK(LDR_DATA_TABLE_ENTRY, HashLinks, 0x70);
NT_CHECK(LDR_DATA_TABLE_ENTRY, TimeDateStamp, 0x80);
NT_SIZE(LDR_DATA_TABLE_ENTRY, 0x120);

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
  UCHAR Pad0[0x100 - 0x28];
} KPRCB;
NT_CHECK(KPRCB, CurrentThread, 0x8);
NT_CHECK(KPRCB, Number, 0x24);

typedef struct _KPCR {
  UCHAR Pad0[0x18];
  struct _KPCR* Self;
  KPRCB* CurrentPrcb;
  UCHAR Pad1[0x180 - 0x28];
  KPRCB Prcb;
} KPCR;
NT_CHECK(KPCR, Self, 0x18);
NT_CHECK(KPCR, CurrentPrcb, 0x20);
NT_CHECK(KPCR, Prcb, 0x180);

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
  UCHAR Pad0[0x260 - 0x238];
  ULONG NtBuildNumber;
  ULONG NtProductType;
  UCHAR ProductTypeIsValid;
  UCHAR Reserved0;
  USHORT NativeProcessorArchitecture;
  ULONG NtMajorVersion;
  ULONG NtMinorVersion;
  UCHAR Pad1[0x2d0 - 0x274];
  ULONG SuiteMask;
  UCHAR KdDebuggerEnabled;
  UCHAR Pad2[0x320 - 0x2d5];
  ULONGLONG TickCount;
  UCHAR Pad3[0x720 - 0x328];
} KUSER_SHARED_DATA;
NT_CHECK(KUSER_SHARED_DATA, SystemTime, 0x14);
NT_CHECK(KUSER_SHARED_DATA, NtSystemRoot, 0x30);
NT_CHECK(KUSER_SHARED_DATA, NtBuildNumber, 0x260);
NT_CHECK(KUSER_SHARED_DATA, NtProductType, 0x264);
NT_CHECK(KUSER_SHARED_DATA, NtMajorVersion, 0x26c);
NT_CHECK(KUSER_SHARED_DATA, NtMinorVersion, 0x270);
NT_CHECK(KUSER_SHARED_DATA, KdDebuggerEnabled, 0x2d4);
NT_CHECK(KUSER_SHARED_DATA, TickCount, 0x320);
NT_SIZE(KUSER_SHARED_DATA, 0x720);

/* KDDEBUGGER_DATA64 (wdbgexts.h): a published, fixed layout; the first fields debuggers read. */
typedef struct _DBGKD_DEBUG_DATA_HEADER64 {
  ULONGLONG Flink;
  ULONGLONG Blink;
  ULONG OwnerTag;
  ULONG Size;
} DBGKD_DEBUG_DATA_HEADER64;

typedef struct _KDDEBUGGER_DATA64 {
  DBGKD_DEBUG_DATA_HEADER64 Header;
  ULONGLONG KernBase;
  ULONGLONG BreakpointWithStatus;
  ULONGLONG SavedContext;
  USHORT ThCallbackStack;
  USHORT NextCallback;
  USHORT FramePointer;
  USHORT PaeEnabled;
  ULONGLONG KiCallUserMode;
  ULONGLONG KeUserCallbackDispatcher;
  ULONGLONG PsLoadedModuleList;
  ULONGLONG PsActiveProcessHead;
  ULONGLONG PspCidTable;
  UCHAR Pad0[0x218 - 0x60];
  ULONGLONG KiProcessorBlock;
  UCHAR Pad1[0x368 - 0x220];
} KDDEBUGGER_DATA64;
NT_CHECK(KDDEBUGGER_DATA64, KernBase, 0x18);
NT_CHECK(KDDEBUGGER_DATA64, PsLoadedModuleList, 0x48);
NT_CHECK(KDDEBUGGER_DATA64, PsActiveProcessHead, 0x50);
NT_CHECK(KDDEBUGGER_DATA64, KiProcessorBlock, 0x218);
NT_SIZE(KDDEBUGGER_DATA64, 0x368);

#endif
