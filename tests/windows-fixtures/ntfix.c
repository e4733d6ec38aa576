/* ntfix: the symbol tests' Windows kernel image (ntoskrnl.exe + ntkrnlmp.pdb): the 19041
 * structures of nt_types.h, the globals a debugger reads, a call chain with .pdata, and the
 * sections real kernels have (PAGE, and POOLCODE, which kernel scans look for). The tests fill
 * the globals of a loaded copy in memory; the initial values here are only defaults. */
#include "nt_types.h"

__declspec(dllexport) LIST_ENTRY PsActiveProcessHead;
__declspec(dllexport) LIST_ENTRY PsLoadedModuleList;
__declspec(dllexport) EPROCESS* PsInitialSystemProcess;
__declspec(dllexport) ULONG NtBuildNumber = 0xF0004A61;
__declspec(dllexport) ULONG KeNumberProcessors = 1;
KDDEBUGGER_DATA64 KdDebuggerDataBlock = {{{0, 0}, 0x4742444B, sizeof(KDDEBUGGER_DATA64)}};
LIST_ENTRY KdpDebuggerDataListHead;
ULONGLONG KiWaitNever = 0x8642097531FEDCBAull;
ULONGLONG KiWaitAlways = 0x0F1E2D3C4B5A6978ull;
UCHAR KdpDataBlockEncoded;
KPRCB* KiProcessorBlock[64];
ULONGLONG MmPteBase = 0xFFFFF68000000000ull;
/* Referenced so that the compiler keeps every type in the PDB. */
KUSER_SHARED_DATA* KiSharedUserData;
ETHREAD* KiInitialThread;
KLDR_DATA_TABLE_ENTRY* KiLoaderEntry;
LDR_DATA_TABLE_ENTRY* KiUserLoaderEntry;
PEB* KiPeb;
KPCR* KiPcr;
KTHREAD_STATE KiState;
KWAIT_REASON KiWaitReason;

#pragma code_seg("PAGE")
__declspec(noinline) LONG ObpLookupObjectName(UNICODE_STRING* name, ULONG flags) {
  volatile ULONG sink = flags;
  return (LONG)(name->Length + sink);
}

__declspec(noinline) LONG IopCreateFile(UNICODE_STRING* name, ULONG access) {
  LONG status = ObpLookupObjectName(name, access | 1);
  return status + ObpLookupObjectName(name, access | 2);
}

__declspec(dllexport) LONG NtCreateFile(UNICODE_STRING* name, ULONG access) { return IopCreateFile(name, access) + 1; }
__declspec(dllexport) LONG NtClose(PVOID handle) { return (LONG)(ULONGLONG)handle; }
#pragma code_seg()

#pragma code_seg("POOLCODE")
__declspec(dllexport) PVOID ExAllocatePoolWithTag(ULONG type, ULONGLONG size, ULONG tag) {
  return (PVOID)(size + type + tag);
}
#pragma code_seg()

__declspec(dllexport) void DbgBreakPointWithStatus(ULONG status) { (void)status; }

void KiSystemStartup(void) {
  UNICODE_STRING name = {0, 0, 0};
  KiProcessorBlock[0] = 0;
  NtCreateFile(&name, 0);
}
