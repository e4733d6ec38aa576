/* wsfix: a freestanding x64 kernel-mode image for the symbol tests. clang-cl-14 and lld-link-14
 * build it during the build into wsfix.sys + wsfix.pdb (CMakeLists.txt); the tests read every
 * fact they check (offsets, types, RVAs, GUID) back from llvm-pdbutil-14 and llvm-readobj-14.
 * It has the kinds of types a kernel PDB has: structs with explicit padding, unions, enums,
 * bitfields in anonymous unions (flattened into the parent as in Microsoft's PDBs), arrays,
 * pointers (to data, to void, to functions, to an incomplete type), nested structs and a
 * self-referencing list; exported and private functions, a call chain with .pdata, and data. */

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

typedef struct _LIST_ENTRY {
  struct _LIST_ENTRY* Flink;
  struct _LIST_ENTRY* Blink;
} LIST_ENTRY, *PLIST_ENTRY;

typedef struct _UNICODE_STRING {
  USHORT Length;
  USHORT MaximumLength;
  __wchar_t* Buffer;
} UNICODE_STRING;

typedef enum _WS_STATE { WsIdle = 0, WsRunning = 2, WsWaiting = 5, WsGone = -1 } WS_STATE;

typedef union _WS_FAST_REF {
  PVOID Object;
  ULONGLONG RefCnt : 4;
  ULONGLONG Value;
} WS_FAST_REF;

typedef struct _WS_HEADER {
  UCHAR Type;
  UCHAR Signalling;
  USHORT Size;
  LONG SignalState;
  LIST_ENTRY WaitListHead;
} WS_HEADER;

typedef struct _WS_INNER {
  ULONG Depth;
  ULONG Mask;
  WS_HEADER Header;
} WS_INNER;

typedef struct _WS_MIDDLE {
  ULONGLONG Key;
  WS_INNER Inner;
} WS_MIDDLE;

struct _WS_OPAQUE; /* declared, never defined */

typedef struct _WS_OBJECT {
  WS_HEADER Header;
  ULONGLONG Id;
  LIST_ENTRY Links;
  union {
    ULONG Flags;
    struct {
      ULONG Active : 1;
      ULONG Priority : 3;
      ULONG Reserved : 12;
      ULONG HighBits : 16;
    };
  };
  WS_STATE State;
  UCHAR Name[15];
  UCHAR Pad0[1];
  UNICODE_STRING Path;
  WS_FAST_REF Token;
  struct _WS_OBJECT* Parent;
  LONG (*Callback)(PVOID Context, ULONG Reason);
  ULONG Counts[4];
  SHORT Delta;
  CHAR Letter;
  BOOLEAN Ready;
  __wchar_t Wide;
  USHORT Pad1;
  LONGLONG Signed64;
  double Ratio;
  WS_MIDDLE Middle;
  UCHAR Pad2[0x200 - 0xc0];
  ULONGLONG FarField;
  struct _WS_OPAQUE* Opaque;
  ULONG Matrix[2][3];
} WS_OBJECT;

_Static_assert(__builtin_offsetof(WS_OBJECT, Flags) == 0x30, "Flags");
_Static_assert(__builtin_offsetof(WS_OBJECT, Middle) == 0x98, "Middle");
_Static_assert(__builtin_offsetof(WS_OBJECT, FarField) == 0x200, "FarField");

typedef struct _WS_TABLE_ENTRY {
  ULONG Index;
  ULONG Kind;
  WS_OBJECT* Object;
} WS_TABLE_ENTRY;

/* Data. */
__declspec(dllexport) LIST_ENTRY WsObjectList;
__declspec(dllexport) WS_OBJECT WsRoot = {
    {1, 0, sizeof(WS_OBJECT), 0, {0, 0}}, 0x1234, {0, 0}, {0x21}, WsRunning, "root"};
__declspec(dllexport) WS_OBJECT* WsRootPointer = &WsRoot;
__declspec(dllexport) ULONG WsBuildNumber = 0xF0004A61;
WS_TABLE_ENTRY WsTable[4];

/* Code: a call chain (NtCreateThing -> WsCreateInner -> WsTouch) with frames and .pdata. */
#pragma code_seg("PAGE")
__declspec(noinline) static LONG WsTouch(WS_OBJECT* o, ULONG v) {
  volatile ULONG sink = v;
  o->Counts[v & 3] += sink;
  return (LONG)o->Counts[0];
}

__declspec(noinline) LONG WsCreateInner(WS_OBJECT* o, ULONG v) {
  LONG r = WsTouch(o, v + 1);
  return r + WsTouch(o, v + 2);
}

__declspec(dllexport) LONG NtCreateThing(ULONG v) { return WsCreateInner(&WsRoot, v) + 1; }
__declspec(dllexport) LONG NtQueryThing(ULONG v) { return (LONG)WsRoot.Counts[v & 3]; }
__declspec(dllexport) LONG NtCloseThing(ULONG v) { return WsTouch(&WsRoot, v); }
#pragma code_seg()

LONG WsDefaultCallback(PVOID Context, ULONG Reason) { return (LONG)Reason; }
__declspec(dllexport) LONG (*WsDispatch[3])(ULONG) = {NtCreateThing, NtQueryThing, NtCloseThing};

void WsEntry(void) {
  WsRoot.Callback = WsDefaultCallback;
  WsTable[0].Object = &WsRoot;
  NtCreateThing(1);
}
