/* The Windows-shaped test guest's kernel: ntoskrnl.exe (PDB ntkrnlmp.pdb), freestanding C.
 *
 * boot.S enters KiSystemStartup in long mode with the stub's page tables (identity map of the
 * first 64 MiB, this image at WG_NTOS_BASE) and the multiboot information. The kernel then builds
 * what a debugger finds in a Windows 10 19041 kernel: its own page tables with a PML4 self-map,
 * KUSER_SHARED_DATA, the images mapped per section, System and three user processes (own page
 * tables, PEB, loader lists, user pages with different bytes), two threads each,
 * PsLoadedModuleList, the KD debugger data block (encoded when the command line says
 * `kdbg=encoded`), KPCR/KPRCB; it prints a JSON report of all of it on COM1, switches to its page
 * tables and the first System thread's stack, and runs a fixed call chain forever:
 * KiStartSystemThread -> PspSystemThreadStartup -> ExpWorkerThread -> IopCreateFileWorker ->
 * NtCreateFile -> ExAllocatePoolWithTag. */
#include "../../windows-fixtures/nt_types.h" /* one header for this guest and the symbol tests' kernel */
#include "winguest.h"

#define EXPORT __declspec(dllexport)
#define NOINLINE __declspec(noinline)

/* ---- Exported and debugger-visible globals (names as in Windows) ---------------------------- */

LIST_ENTRY PsActiveProcessHead;
EXPORT LIST_ENTRY PsLoadedModuleList;
EXPORT EPROCESS* PsInitialSystemProcess;
EXPORT ULONG NtBuildNumber = 0xF0000000u | WG_BUILD_NUMBER;
ULONG64 MmPteBase;
KPRCB* KiProcessorBlock[1];
VOID* PspCidTable;
LIST_ENTRY64 KdpDebuggerDataListHead;
KDDEBUGGER_DATA64 KdDebuggerDataBlock;
ULONG64 KiWaitNever;
ULONG64 KiWaitAlways;
UCHAR KdpDataBlockEncoded;
DBGKD_GET_VERSION64 KdVersionBlock;
KPCR KiInitialPcr;
volatile ULONG64 KiLoopCount; /* incremented by every NtCreateFile */

EXPORT NOINLINE void DbgBreakPointWithStatus(ULONG status);

/* The kernel's own GDT (the boot stub's lies in memory this kernel unmaps). */
static ULONG64 KiGdt[3] = {0, 0x00AF9A000000FFFFull, 0x00CF92000000FFFFull};

/* ---- Small helpers -------------------------------------------------------------------------- */

static void fill(void* dst, UCHAR value, ULONG64 n) {
  __asm__ volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(value) : "memory");
}
static void copy(void* dst, const void* src, ULONG64 n) {
  __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}
static ULONG64 length(const char* s) {
  ULONG64 n = 0;
  while (s[n]) ++n;
  return n;
}
static void outb(USHORT port, UCHAR value) { __asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port)); }

static void put(const char* s) {
  while (*s) outb(0x3f8, (UCHAR)*s++);
}
static void put_hex(ULONG64 v) {
  char text[19];
  int i = 18;
  text[i] = 0;
  do {
    text[--i] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v);
  text[--i] = 'x';
  text[--i] = '0';
  put(text + i);
}
/* "key":"0x..." with a leading comma unless first. */
static void put_field(const char* key, ULONG64 v, int first) {
  if (!first) put(",");
  put("\"");
  put(key);
  put("\":\"");
  put_hex(v);
  put("\"");
}
static void put_text(const char* key, const char* v) {
  put(",\"");
  put(key);
  put("\":\"");
  put(v);
  put("\"");
}

static void halt_with(const char* why) {
  put("toolhost-winguest: fatal: ");
  put(why);
  put("\n");
  for (;;) __asm__ volatile("cli; hlt");
}

/* ---- Physical allocation (identity-mapped while the kernel builds) --------------------------- */

static ULONG64 table_next = WG_TABLE_POOL_PA;
static ULONG64 npp_next = 0x1000; /* offset into the non-paged pool; page 0 stays unused */
static ULONG64 user_next = WG_USER_POOL_PA;

static ULONG64 alloc_table(void) {
  if (table_next >= WG_TABLE_POOL_END) halt_with("out of page tables");
  const ULONG64 pa = table_next;
  table_next += 0x1000;
  fill((void*)pa, 0, 0x1000);
  return pa;
}
static ULONG64 alloc_user_page(void) {
  if (user_next >= WG_USER_POOL_END) halt_with("out of user pages");
  const ULONG64 pa = user_next;
  user_next += 0x1000;
  fill((void*)pa, 0, 0x1000);
  return pa;
}
/* Non-paged pool: returns the object's VA; NPP_PTR gives the pointer the kernel writes through. */
static ULONG64 npp_alloc(ULONG64 size, ULONG64 align) {
  npp_next = (npp_next + align - 1) & ~(align - 1);
  const ULONG64 va = WG_NPP_VA + npp_next;
  fill((void*)(WG_NPP_PA + npp_next), 0, size);
  npp_next += size;
  if (npp_next > 0x200000) halt_with("out of non-paged pool");
  return va;
}
#define NPP_PTR(va) ((void*)((ULONG64)(va)-WG_NPP_VA + WG_NPP_PA))

/* ---- Page tables ---------------------------------------------------------------------------- */

enum {
  PTE_P = 1,
  PTE_RW = 2,
  PTE_US = 4,
  PTE_A = 0x20,
  PTE_D = 0x40,
  PTE_PS = 0x80,
  PTE_G = 0x100,
  PTE_TRANSITION = 0x800
};
#define PTE_NX (1ull << 63)
#define PFN_MASK 0x000ffffffffff000ull

/* The entry for `va` at `level` (3 = PML4E ... 0 = PTE), creating tables above it. */
static ULONG64* entry_for(ULONG64 pml4, ULONG64 va, int level) {
  ULONG64 table = pml4;
  const int user = va < 0x0000800000000000ull;
  for (int l = 3; l > level; --l) {
    ULONG64* e = (ULONG64*)table + ((va >> (12 + 9 * l)) & 511);
    if (!(*e & PTE_P)) *e = alloc_table() | PTE_P | PTE_RW | PTE_A | (user ? PTE_US : 0);
    table = *e & PFN_MASK;
  }
  return (ULONG64*)table + ((va >> (12 + 9 * level)) & 511);
}
static void map_4k(ULONG64 pml4, ULONG64 va, ULONG64 pa, ULONG64 flags) {
  *entry_for(pml4, va, 0) = pa | flags | PTE_P | PTE_A;
}

/* ---- PE images ------------------------------------------------------------------------------ */

typedef struct image {
  const char* name; /* BaseDllName */
  const char* path; /* FullDllName */
  ULONG64 base, pa;
  ULONG size, checksum, timestamp, entry, pdata_rva, pdata_size;
} image;

static ULONG rd32(ULONG64 p) { return *(volatile ULONG*)p; }
static USHORT rd16(ULONG64 p) { return *(volatile USHORT*)p; }

/* Maps an image (its bytes at `pa`, file offset == RVA) section by section: headers read-only
 * and no-execute, code read-execute, data no-execute (writable if the section is). */
static void load_image(ULONG64 pml4, image* img) {
  const ULONG64 pe = img->pa + rd32(img->pa + 0x3c);
  if (rd16(img->pa) != 0x5a4d || rd32(pe) != 0x4550) halt_with("an image is not a PE");
  const ULONG64 opt = pe + 24;
  img->timestamp = rd32(pe + 8);
  img->entry = rd32(opt + 0x10);
  img->size = rd32(opt + 0x38);
  img->checksum = rd32(opt + 0x40);
  img->pdata_rva = rd32(opt + 0x70 + 3 * 8);
  img->pdata_size = rd32(opt + 0x70 + 3 * 8 + 4);
  const ULONG headers = rd32(opt + 0x3c);
  for (ULONG off = 0; off < headers; off += 0x1000) map_4k(pml4, img->base + off, img->pa + off, PTE_G | PTE_NX);
  const USHORT sections = rd16(pe + 6);
  const ULONG64 table = opt + rd16(pe + 20);
  for (USHORT i = 0; i < sections; ++i) {
    const ULONG64 s = table + 40ull * i;
    const ULONG vsize = rd32(s + 8), rva = rd32(s + 12), raw = rd32(s + 16), file = rd32(s + 20);
    const ULONG flags = rd32(s + 36);
    if (file != rva || raw < vsize) halt_with("a section's file offset is not its RVA");
    const ULONG64 prot = (flags & 0x80000000u ? PTE_RW | PTE_D : 0) | (flags & 0x20000000u ? 0 : PTE_NX) | PTE_G;
    for (ULONG off = 0; off < vsize; off += 0x1000) map_4k(pml4, img->base + rva + off, img->pa + rva + off, prot);
  }
}

/* ---- Strings in the non-paged pool and in user pages ----------------------------------------- */

/* Writes `s` as UTF-16 at `where` (written through `ptr`) and fills `u`. */
static void make_unicode(UNICODE_STRING* u, ULONG64 where, void* ptr, const char* s) {
  const ULONG64 n = length(s);
  WCHAR* w = (WCHAR*)ptr;
  for (ULONG64 i = 0; i < n; ++i) w[i] = (WCHAR)s[i];
  w[n] = 0;
  u->Length = (USHORT)(2 * n);
  u->MaximumLength = (USHORT)(2 * n + 2);
  u->Buffer = (WCHAR*)where;
}
static void npp_unicode(UNICODE_STRING* u, const char* s) {
  const ULONG64 va = npp_alloc(2 * length(s) + 2, 8);
  make_unicode(u, va, NPP_PTR(va), s);
}

static void list_init(LIST_ENTRY* head_ptr, ULONG64 head_va) {
  head_ptr->Flink = head_ptr->Blink = (LIST_ENTRY*)head_va;
}
/* Inserts the entry at `entry_va` (written through `entry`) before the head; `prev` is a writable
 * pointer to the current last entry (the head itself when the list is empty). */
static void list_append(LIST_ENTRY* head, ULONG64 head_va, LIST_ENTRY* entry, ULONG64 entry_va, LIST_ENTRY* prev) {
  entry->Flink = (LIST_ENTRY*)head_va;
  entry->Blink = head->Blink;
  prev->Flink = (LIST_ENTRY*)entry_va;
  head->Blink = (LIST_ENTRY*)entry_va;
}

/* Pointers the kernel can write for a list entry VA in the non-paged pool or in this image. */
static LIST_ENTRY* writable(ULONG64 va) {
  if (va >= WG_NPP_VA && va < WG_NPP_VA + 0x200000) return (LIST_ENTRY*)NPP_PTR(va);
  return (LIST_ENTRY*)va;
}
static void append(ULONG64 head_va, ULONG64 entry_va) {
  LIST_ENTRY* head = writable(head_va);
  list_append(head, head_va, writable(entry_va), entry_va, writable((ULONG64)head->Blink));
}

/* ---- The machine being built ---------------------------------------------------------------- */

#define MAX_PROCESSES 4
#define THREADS_PER_PROCESS 2

typedef struct process_spec {
  const char* name;
  ULONG pid, parent;
  LONG session; /* -1: none */
  ULONG tids[THREADS_PER_PROCESS];
  ULONG64 peb_va, image_va;
  UCHAR pattern_mul, pattern_add;
} process_spec;

static const process_spec specs[MAX_PROCESSES] = {
    {"System", 4, 0, -1, {0x8, 0xc}, 0, 0, 0, 0},
    {"smss.exe", 0x1a8, 4, -1, {0x1ac, 0x1b4}, 0x000000c5a2d6e000ull, 0x00007ff6b4e10000ull, 7, 0x4b},
    {"csrss.exe", 0x22c, 0x1a8, 0, {0x230, 0x238}, 0x000000e13f2a1000ull, 0x00007ff7c0340000ull, 13, 0x11},
    {"winlogon.exe", 0x284, 0x1a8, 1, {0x288, 0x2a0}, 0x000000a87bc44000ull, 0x00007ff65e9a0000ull, 3, 0x5a},
};

/* The page every user process has at the same VA with different bytes: byte k is
 * (k * mul + add) & 0xff, then the 16-byte signature "TOOLHOST-PID-xxx" (xxx: the pid in hex). */
#define USER_PATTERN_VA 0x000001d000000000ull
#define NTDLL_VA 0x00007ffcd5a40000ull
#define TEB_BASE_VA 0x000000c000000000ull /* + pid * 0x10000 + thread * 0x2000 */

typedef struct built_thread {
  ULONG64 ethread, stack_base, teb;
  ULONG tid;
  UCHAR state;
} built_thread;

typedef struct built_process {
  ULONG64 eprocess, dtb, user_pattern_pa;
  built_thread threads[THREADS_PER_PROCESS];
} built_process;

static built_process built[MAX_PROCESSES];
static image images[3] = {
    {"ntoskrnl.exe", "\\SystemRoot\\system32\\ntoskrnl.exe", WG_NTOS_BASE, WG_NTOS_PA},
    {"hal.dll", "\\SystemRoot\\system32\\hal.dll", WG_HAL_BASE, WG_HAL_PA},
    {"thdrv.sys", "\\SystemRoot\\System32\\drivers\\thdrv.sys", WG_DRIVER_BASE, WG_DRIVER_PA},
};
static ULONG64 module_entries[3];
static ULONG64 system_pml4;
static ULONG64 kuser_pa;
static ULONG64 paged_pages[3]; /* PAs: valid, transition, paged-out (the last is never mapped) */

NOINLINE void KiStartSystemThread(void);

/* Maps a user page and returns the PA. */
static ULONG64 map_user(ULONG64 pml4, ULONG64 va, ULONG64 flags) {
  const ULONG64 pa = alloc_user_page();
  map_4k(pml4, va, pa, flags | PTE_US);
  return pa;
}

/* A user module entry in the PEB page at `*cursor` (PA and VA advance together). */
static void user_module(PEB_LDR_DATA* ldr, ULONG64 ldr_va, ULONG64* pa, ULONG64* va, const char* full,
                        const char* base_name, ULONG64 dll_base, ULONG size) {
  LDR_DATA_TABLE_ENTRY* e = (LDR_DATA_TABLE_ENTRY*)*pa;
  const ULONG64 e_va = *va;
  *pa += sizeof(*e);
  *va += sizeof(*e);
  e->DllBase = (VOID*)dll_base;
  e->SizeOfImage = size;
  e->EntryPoint = (VOID*)(dll_base + 0x1000);
  make_unicode(&e->FullDllName, *va, (void*)*pa, full);
  *pa += 2 * length(full) + 2;
  *va += 2 * length(full) + 2;
  make_unicode(&e->BaseDllName, *va, (void*)*pa, base_name);
  *pa += (2 * length(base_name) + 2 + 15) & ~15ull;
  *va += (2 * length(base_name) + 2 + 15) & ~15ull;
  e->HashLinks.Flink = e->HashLinks.Blink = (LIST_ENTRY*)(e_va + 0x70);
  static const ULONG64 list_offsets[3] = {0x10, 0x20, 0x30};
  for (int i = 0; i < 3; ++i) {
    LIST_ENTRY* head = (LIST_ENTRY*)((ULONG64)ldr + list_offsets[i]);
    const ULONG64 head_va = ldr_va + list_offsets[i];
    LIST_ENTRY* prev =
        head->Blink == (LIST_ENTRY*)head_va ? head : (LIST_ENTRY*)((ULONG64)head->Blink - ldr_va + (ULONG64)ldr);
    list_append(head, head_va, (LIST_ENTRY*)((ULONG64)e + 0x10 * i), e_va + 0x10 * i, prev);
  }
}

static void build_user_space(int index, EPROCESS* p) {
  const process_spec* s = &specs[index];
  const ULONG64 pml4 = built[index].dtb;
  /* Image and ntdll pages: read-execute, an MZ header and the name. */
  const ULONG64 image_pa = map_user(pml4, s->image_va, 0);
  *(USHORT*)image_pa = 0x5a4d;
  copy((void*)(image_pa + 0x40), s->name, length(s->name));
  static ULONG64 ntdll_pa;
  if (!ntdll_pa) {
    ntdll_pa = alloc_user_page();
    *(USHORT*)ntdll_pa = 0x5a4d;
    copy((void*)(ntdll_pa + 0x40), "ntdll.dll", 9);
  }
  map_4k(pml4, NTDLL_VA, ntdll_pa, PTE_US);
  map_4k(pml4, WG_KUSER_USER_VA, kuser_pa, PTE_US | PTE_NX);
  /* The pattern page. */
  const ULONG64 pat = map_user(pml4, USER_PATTERN_VA, PTE_RW | PTE_D | PTE_NX);
  for (ULONG k = 0; k < 0x1000; ++k) ((UCHAR*)pat)[k] = (UCHAR)(k * s->pattern_mul + s->pattern_add);
  copy((void*)pat, "TOOLHOST-PID-", 13);
  for (int d = 0; d < 3; ++d) ((UCHAR*)pat)[13 + d] = "0123456789abcdef"[(s->pid >> (4 * (2 - d))) & 0xf];
  built[index].user_pattern_pa = pat;
  /* PEB, with the loader data and two module entries in the same page. */
  const ULONG64 peb_pa = map_user(pml4, s->peb_va, PTE_RW | PTE_D | PTE_NX);
  PEB* peb = (PEB*)peb_pa;
  peb->ImageBaseAddress = (VOID*)s->image_va;
  peb->SessionId = s->session < 0 ? 0 : (ULONG)s->session;
  const ULONG64 ldr_va = s->peb_va + 0x7d0;
  PEB_LDR_DATA* ldr = (PEB_LDR_DATA*)(peb_pa + 0x7d0);
  peb->Ldr = (PEB_LDR_DATA*)ldr_va;
  ldr->Length = sizeof(*ldr);
  ldr->Initialized = 1;
  for (int i = 0; i < 3; ++i) {
    LIST_ENTRY* h = (LIST_ENTRY*)((ULONG64)ldr + 0x10 + 0x10 * i);
    h->Flink = h->Blink = (LIST_ENTRY*)(ldr_va + 0x10 + 0x10 * i);
  }
  ULONG64 cursor_pa = peb_pa + 0x830, cursor_va = s->peb_va + 0x830;
  char full[64];
  const char* prefix = "\\SystemRoot\\System32\\";
  ULONG64 n = length(prefix);
  copy(full, prefix, n);
  copy(full + n, s->name, length(s->name) + 1);
  user_module(ldr, ldr_va, &cursor_pa, &cursor_va, full, s->name, s->image_va, 0x1000);
  user_module(ldr, ldr_va, &cursor_pa, &cursor_va, "C:\\Windows\\SYSTEM32\\ntdll.dll", "ntdll.dll", NTDLL_VA, 0x1000);
  p->Peb = (PEB*)s->peb_va;
}

static void build_process(int index) {
  const process_spec* s = &specs[index];
  built_process* b = &built[index];
  const ULONG64 va = npp_alloc(sizeof(EPROCESS) + 0x40, 0x40) + 0x40; /* object header room */
  b->eprocess = va;
  EPROCESS* p = (EPROCESS*)NPP_PTR(va);
  if (index == 0) {
    b->dtb = system_pml4;
  } else {
    b->dtb = alloc_table();
    for (int i = 256; i < 512; ++i) ((ULONG64*)b->dtb)[i] = ((ULONG64*)system_pml4)[i];
    ((ULONG64*)b->dtb)[WG_SELF_MAP_INDEX] = b->dtb | PTE_P | PTE_RW | PTE_A | PTE_D | PTE_NX;
  }
  p->Pcb.Header.Type = ProcessObject;
  p->Pcb.Header.Size = sizeof(KPROCESS) / 8;
  list_init(&p->Pcb.Header.WaitListHead, va + 0x8);
  list_init(&p->Pcb.ProfileListHead, va + 0x18);
  p->Pcb.DirectoryTableBase = b->dtb;
  p->Pcb.UserDirectoryTableBase = 1; /* no KVA shadow: Windows stores 1 */
  list_init(&p->Pcb.ThreadListHead, va + 0x30);
  list_init(&p->ThreadListHead, va + 0x5e0);
  list_init(&p->SessionProcessLinks, va + 0x4a0);
  p->UniqueProcessId = (VOID*)(ULONG64)s->pid;
  p->InheritedFromUniqueProcessId = (VOID*)(ULONG64)s->parent;
  p->CreateTime.QuadPart = 0x01d9a6b3c0000000ll + index * 10000000ll;
  p->VirtualSize = 0x2000000ull * (index + 1);
  p->ActiveThreads = THREADS_PER_PROCESS;
  p->PriorityClass = 2;
  copy(p->ImageFileName, s->name, length(s->name) < 15 ? length(s->name) : 14);
  const ULONG64 handle_table = npp_alloc(sizeof(HANDLE_TABLE), 0x10);
  HANDLE_TABLE* ht = (HANDLE_TABLE*)NPP_PTR(handle_table);
  ht->QuotaProcess = (EPROCESS*)va;
  ht->UniqueProcessId = s->pid;
  list_init(&ht->HandleTableList, handle_table + 0x18);
  p->ObjectTable = (HANDLE_TABLE*)handle_table;
  const ULONG64 token = npp_alloc(0x100, 0x10);
  p->Token.Value = token | 7;
  if (s->session >= 0) {
    const ULONG64 session = npp_alloc(sizeof(MM_SESSION_SPACE), 0x10);
    ((MM_SESSION_SPACE*)NPP_PTR(session))->SessionId = (ULONG)s->session;
    ((MM_SESSION_SPACE*)NPP_PTR(session))->ReferenceCount = 1;
    p->Session = (MM_SESSION_SPACE*)session;
  }
  if (index > 0) build_user_space(index, p);
  append((ULONG64)&PsActiveProcessHead, va + 0x448);

  for (int t = 0; t < THREADS_PER_PROCESS; ++t) {
    built_thread* bt = &b->threads[t];
    const ULONG64 tva = npp_alloc(sizeof(ETHREAD) + 0x40, 0x40) + 0x40;
    ETHREAD* e = (ETHREAD*)NPP_PTR(tva);
    const ULONG64 stack = npp_alloc(0x3000, 0x1000);
    bt->ethread = tva;
    bt->tid = s->tids[t];
    bt->stack_base = stack + 0x3000;
    bt->state = index == 0 && t == 0 ? Running : Waiting;
    e->Tcb.Header.Type = ThreadObject;
    e->Tcb.Header.Size = sizeof(KTHREAD) / 8;
    list_init(&e->Tcb.Header.WaitListHead, tva + 0x8);
    e->Tcb.InitialStack = (VOID*)(bt->stack_base - 0x30);
    e->Tcb.StackBase = (VOID*)bt->stack_base;
    e->Tcb.StackLimit = (VOID*)stack;
    e->Tcb.KernelStack = (VOID*)(bt->stack_base - 0x200);
    e->Tcb.ThreadFlags = 1u << 17; /* KernelStackResident */
    e->Tcb.ApcState.Process = (KPROCESS*)va;
    list_init(&e->Tcb.ApcState.ApcListHead[0], tva + 0x98);
    list_init(&e->Tcb.ApcState.ApcListHead[1], tva + 0xa8);
    e->Tcb.Process = (KPROCESS*)va;
    e->Tcb.State = bt->state;
    e->Tcb.WaitReason = index == 0 ? WrQueue : UserRequest;
    e->Tcb.WaitMode = index == 0 ? 0 : 1;
    e->Tcb.Priority = index == 0 ? 13 : 8 + t;
    e->Tcb.BasePriority = index == 0 ? 13 : 8;
    e->Tcb.KernelTime = 10 + t;
    e->Tcb.UserTime = index == 0 ? 0 : 3 + t;
    e->CreateTime.QuadPart = p->CreateTime.QuadPart + t;
    e->Cid.UniqueProcess = (VOID*)(ULONG64)s->pid;
    e->Cid.UniqueThread = (VOID*)(ULONG64)bt->tid;
    list_init(&e->IrpList, tva + 0x4b0);
    e->StartAddress = (VOID*)(index == 0 ? (ULONG64)&KiStartSystemThread : s->image_va + 0x1000);
    e->Win32StartAddress = e->StartAddress;
    if (index > 0) {
      bt->teb = TEB_BASE_VA + (ULONG64)s->pid * 0x10000 + t * 0x2000;
      const ULONG64 teb_pa = map_user(b->dtb, bt->teb, PTE_RW | PTE_D | PTE_NX);
      ((ULONG64*)teb_pa)[6] = bt->teb;    /* NT_TIB.Self */
      ((ULONG64*)teb_pa)[8] = s->pid;     /* ClientId.UniqueProcess */
      ((ULONG64*)teb_pa)[9] = bt->tid;    /* ClientId.UniqueThread */
      ((ULONG64*)teb_pa)[12] = s->peb_va; /* ProcessEnvironmentBlock */
      e->Tcb.Teb = (VOID*)bt->teb;
    }
    append(va + 0x5e0, tva + 0x4e8);
    append(va + 0x30, tva + 0x2f8);
  }
}

static void build_modules(void) {
  list_init(&PsLoadedModuleList, (ULONG64)&PsLoadedModuleList);
  for (int i = 0; i < 3; ++i) {
    const image* img = &images[i];
    const ULONG64 va = npp_alloc(sizeof(KLDR_DATA_TABLE_ENTRY), 0x10);
    KLDR_DATA_TABLE_ENTRY* e = (KLDR_DATA_TABLE_ENTRY*)NPP_PTR(va);
    e->DllBase = (VOID*)img->base;
    e->EntryPoint = (VOID*)(img->base + img->entry);
    e->SizeOfImage = img->size;
    e->SizeOfImageNotRounded = img->size;
    e->CheckSum = img->checksum;
    e->TimeDateStamp = img->timestamp;
    e->ExceptionTable = (VOID*)(img->pdata_rva ? img->base + img->pdata_rva : 0);
    e->ExceptionTableSize = img->pdata_size;
    e->Flags = 0x49104000;
    e->LoadCount = 1;
    npp_unicode(&e->FullDllName, img->path);
    npp_unicode(&e->BaseDllName, img->name);
    append((ULONG64)&PsLoadedModuleList, va);
    module_entries[i] = va;
  }
}

static void build_kuser(void) {
  kuser_pa = alloc_user_page();
  KUSER_SHARED_DATA* k = (KUSER_SHARED_DATA*)kuser_pa;
  k->TickCountMultiplier = 0x0fa00000;
  k->ImageNumberLow = 0x8664;
  k->ImageNumberHigh = 0x8664;
  const char* root = "C:\\Windows";
  for (ULONG64 i = 0; root[i]; ++i) k->NtSystemRoot[i] = (WCHAR)root[i];
  k->NtBuildNumber = WG_BUILD_NUMBER;
  k->NtProductType = 1; /* NtProductWinNt */
  k->ProductTypeIsValid = 1;
  k->NativeProcessorArchitecture = 9; /* PROCESSOR_ARCHITECTURE_AMD64 */
  k->NtMajorVersion = 10;
  k->NtMinorVersion = 0;
  k->SuiteMask = 0x110;
  k->KdDebuggerEnabled = 0;
  map_4k(system_pml4, WG_KUSER_VA, kuser_pa, PTE_RW | PTE_D | PTE_NX);
}

/* Paged pool: one valid page, one in transition (valid clear, bit 11 set, PFN kept) and one
 * paged out to the page file (PageFileLow 1, Protection 4 = read/write, PageFileHigh 0x1234). */
static ULONG64 paged_pte_values[3];
static void build_paged_pool(void) {
  for (int i = 0; i < 2; ++i) {
    paged_pages[i] = WG_PAGED_PA + 0x1000ull * i;
    for (ULONG k = 0; k < 0x1000; ++k) ((UCHAR*)paged_pages[i])[k] = (UCHAR)(0xa0 + i);
  }
  paged_pte_values[0] = paged_pages[0] | PTE_P | PTE_RW | PTE_A | PTE_D | PTE_NX;
  paged_pte_values[1] = paged_pages[1] | PTE_TRANSITION | (4ull << 5) | PTE_NX;
  paged_pte_values[2] = (0x1234ull << 32) | (4ull << 5) | (1ull << 1);
  for (int i = 0; i < 3; ++i) *entry_for(system_pml4, WG_PAGED_VA + 0x1000ull * i, 0) = paged_pte_values[i];
}

/* KdEncodeDataBlock's transformation, qword by qword over the whole block. */
static ULONG64 rotl(ULONG64 v, unsigned n) { return n ? (v << n) | (v >> (64 - n)) : v; }
static ULONG64 rotr(ULONG64 v, unsigned n) { return n ? (v >> n) | (v << (64 - n)) : v; }
static ULONG64 bswap(ULONG64 v) { return __builtin_bswap64(v); }
static void encode_debugger_data(void) {
  ULONG64* q = (ULONG64*)&KdDebuggerDataBlock;
  for (ULONG i = 0; i < sizeof(KdDebuggerDataBlock) / 8; ++i)
    q[i] = KiWaitNever ^ rotr((ULONG64)&KdpDataBlockEncoded ^ bswap(KiWaitAlways ^ q[i]), (UCHAR)KiWaitNever);
  (void)rotl;
}

static void build_debugger_data(int encoded) {
  KDDEBUGGER_DATA64* d = &KdDebuggerDataBlock;
  d->Header.OwnerTag = 0x4742444b; /* 'KDBG' */
  d->Header.Size = sizeof(*d);
  d->KernBase = WG_NTOS_BASE;
  d->BreakpointWithStatus = (ULONG64)&DbgBreakPointWithStatus; /* its first byte is the int3 */
  d->PsLoadedModuleList = (ULONG64)&PsLoadedModuleList;
  d->PsActiveProcessHead = (ULONG64)&PsActiveProcessHead;
  d->PspCidTable = (ULONG64)&PspCidTable;
  d->KiProcessorBlock = (ULONG64)&KiProcessorBlock;
  d->MmVirtualTranslationBase = MmPteBase;
  d->OffsetKThreadTeb = 0xf0;
  d->OffsetKThreadKernelStack = 0x58;
  d->OffsetKThreadInitialStack = 0x28;
  d->OffsetKThreadApcProcess = 0xb8;
  d->OffsetKThreadState = 0x184;
  d->SizeEProcess = sizeof(EPROCESS);
  d->OffsetEprocessPeb = 0x550;
  d->OffsetEprocessParentCID = 0x540;
  d->OffsetEprocessDirectoryTableBase = 0x28;
  d->SizePrcb = sizeof(KPRCB);
  d->OffsetPrcbCurrentThread = 0x8;
  d->OffsetPrcbNumber = 0x24;
  d->SizeEThread = sizeof(ETHREAD);
  /* KdpDebuggerDataListHead <-> the block's Header.List. */
  KdpDebuggerDataListHead.Flink = KdpDebuggerDataListHead.Blink = (ULONG64)&KdDebuggerDataBlock;
  d->Header.List.Flink = d->Header.List.Blink = (ULONG64)&KdpDebuggerDataListHead;
  /* Windows picks these at boot; fixed here so every boot is the same. */
  KiWaitNever = 0x8642097531fedcbaull;
  KiWaitAlways = 0x0f1e2d3c4b5a6978ull;
  if (encoded) {
    encode_debugger_data();
    KdpDataBlockEncoded = 1;
  }
  KdVersionBlock.MajorVersion = 0xf;
  KdVersionBlock.MinorVersion = WG_BUILD_NUMBER;
  KdVersionBlock.ProtocolVersion = 6;
  KdVersionBlock.KdSecondaryVersion = 2;
  KdVersionBlock.Flags = 0x7; /* MP | DATA | PTR64 */
  KdVersionBlock.MachineType = 0x8664;
  KdVersionBlock.MaxPacketType = 0xc;
  KdVersionBlock.MaxStateChange = 3;
  KdVersionBlock.MaxManipulate = 0x33;
  KdVersionBlock.KernBase = WG_NTOS_BASE;
  KdVersionBlock.PsLoadedModuleList = (ULONG64)&PsLoadedModuleList;
  KdVersionBlock.DebuggerDataList = (ULONG64)&KdpDebuggerDataListHead;
}

/* ---- The JSON report ------------------------------------------------------------------------ */

static void report(int encoded) {
  put("toolhost-winguest: layout-begin\n{");
  put_field("build", WG_BUILD_NUMBER, 1);
  put_field("kernel_base", WG_NTOS_BASE, 0);
  put_field("system_dtb", system_pml4, 0);
  put_field("self_map_index", WG_SELF_MAP_INDEX, 0);
  put_field("pte_base", MmPteBase, 0);
  put_field("kuser_shared_data", WG_KUSER_VA, 0);
  put_field("kuser_shared_data_user", WG_KUSER_USER_VA, 0);
  put_field("kuser_shared_data_pa", kuser_pa, 0);
  put_field("ps_active_process_head", (ULONG64)&PsActiveProcessHead, 0);
  put_field("ps_loaded_module_list", (ULONG64)&PsLoadedModuleList, 0);
  put_field("ps_initial_system_process", (ULONG64)PsInitialSystemProcess, 0);
  put_field("kpcr", (ULONG64)&KiInitialPcr, 0);
  put_field("current_thread", built[0].threads[0].ethread, 0);
  put_field("kd_version_block", (ULONG64)&KdVersionBlock, 0);
  put(",\"kdbg\":{");
  put_field("address", (ULONG64)&KdDebuggerDataBlock, 1);
  put_field("list_head", (ULONG64)&KdpDebuggerDataListHead, 0);
  put_field("size", sizeof(KdDebuggerDataBlock), 0);
  put(encoded ? ",\"encoded\":true" : ",\"encoded\":false");
  put_field("ki_wait_never", KiWaitNever, 0);
  put_field("ki_wait_always", KiWaitAlways, 0);
  put_field("kdp_data_block_encoded", (ULONG64)&KdpDataBlockEncoded, 0);
  put("}");
  put(",\"call_chain\":[\"KiStartSystemThread\",\"PspSystemThreadStartup\",\"ExpWorkerThread\",\"IopCreateFileWorker\","
      "\"NtCreateFile\",\"ExAllocatePoolWithTag\"]");
  put(",\"modules\":[");
  for (int i = 0; i < 3; ++i) {
    put(i ? ",{" : "{");
    put_field("entry", module_entries[i], 1);
    put_text("name", images[i].name);
    put_field("base", images[i].base, 0);
    put_field("size", images[i].size, 0);
    put_field("pa", images[i].pa, 0);
    put_field("timestamp", images[i].timestamp, 0);
    put("}");
  }
  put("],\"processes\":[");
  for (int i = 0; i < MAX_PROCESSES; ++i) {
    const process_spec* s = &specs[i];
    put(i ? ",{" : "{");
    put_field("eprocess", built[i].eprocess, 1);
    put_text("name", s->name);
    put_field("pid", s->pid, 0);
    put_field("parent", s->parent, 0);
    put_field("dtb", built[i].dtb, 0);
    put_field("peb", s->peb_va, 0);
    if (s->session >= 0) put_field("session", (ULONG64)s->session, 0);
    if (i > 0) {
      put_field("image_base", s->image_va, 0);
      put(",\"user_page\":{");
      put_field("va", USER_PATTERN_VA, 1);
      put_field("pa", built[i].user_pattern_pa, 0);
      put_field("len", 0x1000, 0);
      put_field("mul", s->pattern_mul, 0);
      put_field("add", s->pattern_add, 0);
      put("}");
    }
    put(",\"threads\":[");
    for (int t = 0; t < THREADS_PER_PROCESS; ++t) {
      const built_thread* bt = &built[i].threads[t];
      put(t ? ",{" : "{");
      put_field("ethread", bt->ethread, 1);
      put_field("tid", bt->tid, 0);
      put_field("teb", bt->teb, 0);
      put_field("stack_base", bt->stack_base, 0);
      put_text("state", bt->state == Running ? "running" : "waiting");
      put("}");
    }
    put("]}");
  }
  put("],\"pages\":{");
  put("\"4k\":{");
  put_field("va", WG_NTOS_BASE, 1);
  put_field("pa", WG_NTOS_PA, 0);
  put("},\"2m\":{");
  put_field("va", WG_NPP_VA, 1);
  put_field("pa", WG_NPP_PA, 0);
  put("},\"1g\":{");
  put_field("va", WG_PHYSMAP_VA, 1);
  put_field("pa", 0, 0);
  put("},\"paged_valid\":{");
  put_field("va", WG_PAGED_VA, 1);
  put_field("pa", paged_pages[0], 0);
  put_field("pte", paged_pte_values[0], 0);
  put("},\"transition\":{");
  put_field("va", WG_PAGED_VA + 0x1000, 1);
  put_field("pa", paged_pages[1], 0);
  put_field("pte", paged_pte_values[1], 0);
  put("},\"paged_out\":{");
  put_field("va", WG_PAGED_VA + 0x2000, 1);
  put_field("pte", paged_pte_values[2], 0);
  put("}}}\ntoolhost-winguest: layout-end\n");
}

/* ---- The call chain the guest runs forever -------------------------------------------------- */

#pragma code_seg("POOLCODE")
EXPORT NOINLINE VOID* ExAllocatePoolWithTag(ULONG pool_type, ULONG64 size, ULONG tag) {
  KiLoopCount += 1;
  return (VOID*)(ULONG64)(pool_type + size + tag);
}
#pragma code_seg()

#pragma code_seg("PAGE")
EXPORT NOINLINE LONG NtCreateFile(VOID** handle, ULONG access, VOID* attributes, VOID* status, LONG64* allocation,
                                  ULONG file_attributes, ULONG share, ULONG disposition, ULONG options, VOID* ea,
                                  ULONG ea_length) {
  (void)attributes, (void)status, (void)allocation, (void)ea, (void)file_attributes, (void)share, (void)options;
  VOID* p = ExAllocatePoolWithTag(1, 0x100 + ea_length + disposition, 0x20206f49 /* 'Io  ' */);
  if (handle) *handle = p;
  return access == 0 ? (LONG)0xC000000D : 0;
}
EXPORT NOINLINE LONG NtClose(VOID* handle) { return handle ? 0 : (LONG)0xC0000008; }
#pragma code_seg()

NOINLINE LONG IopCreateFileWorker(ULONG disposition) {
  VOID* handle = 0;
  const LONG status = NtCreateFile(&handle, 0x120089, 0, 0, 0, 0x80, 1, disposition, 0x20, 0, 0);
  NtClose(handle);
  return status;
}

NOINLINE void ExpWorkerThread(void) {
  for (ULONG round = 0;; ++round) {
    IopCreateFileWorker(1 + (round & 1));
    ((KUSER_SHARED_DATA*)WG_KUSER_VA)->TickCountQuad += 1;
    __asm__ volatile("pause");
  }
}

NOINLINE void PspSystemThreadStartup(void) {
  ExpWorkerThread();
  halt_with("the worker returned");
}

EXPORT NOINLINE void DbgBreakPointWithStatus(ULONG status) {
  (void)status;
  __asm__ volatile("int3");
}

NOINLINE void KiStartSystemThread(void) {
  put("toolhost-winguest: ready\n");
  PspSystemThreadStartup();
}

/* ---- Entry ---------------------------------------------------------------------------------- */

static int command_line_has(const char* line, const char* word) {
  if (!line) return 0;
  const ULONG64 n = length(word);
  for (const char* p = line; *p; ++p) {
    ULONG64 i = 0;
    while (i < n && p[i] == word[i]) ++i;
    if (i == n && (p == line || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return 1;
  }
  return 0;
}

void KiSystemStartup(ULONG64 multiboot_info) {
  const char* cmdline = 0;
  if (multiboot_info && (rd32(multiboot_info) & 4)) cmdline = (const char*)(ULONG64)rd32(multiboot_info + 16);
  const int encoded = command_line_has(cmdline, "kdbg=encoded");

  system_pml4 = alloc_table();
  ((ULONG64*)system_pml4)[WG_SELF_MAP_INDEX] = system_pml4 | PTE_P | PTE_RW | PTE_A | PTE_D | PTE_NX;
  MmPteBase = 0xffff000000000000ull | ((ULONG64)WG_SELF_MAP_INDEX << 39);
  for (int i = 0; i < 3; ++i) load_image(system_pml4, &images[i]);
  /* Non-paged pool: one 2 MiB page. Physmap: one 1 GiB page over the first GiB. */
  *entry_for(system_pml4, WG_NPP_VA, 1) = WG_NPP_PA | PTE_P | PTE_RW | PTE_A | PTE_D | PTE_PS | PTE_G | PTE_NX;
  *entry_for(system_pml4, WG_PHYSMAP_VA, 2) = 0 | PTE_P | PTE_RW | PTE_A | PTE_D | PTE_PS | PTE_G | PTE_NX;
  build_kuser();
  build_paged_pool();
  /* Every kernel-half PML4 entry exists now: the user processes copy them. */
  list_init(&PsActiveProcessHead, (ULONG64)&PsActiveProcessHead);
  for (int i = 0; i < MAX_PROCESSES; ++i) build_process(i);
  PsInitialSystemProcess = (EPROCESS*)built[0].eprocess;
  build_modules();

  KPCR* pcr = &KiInitialPcr;
  pcr->Self = pcr;
  pcr->CurrentPrcb = &pcr->Prcb;
  pcr->GdtBase = KiGdt;
  pcr->MajorVersion = 1;
  pcr->MinorVersion = 1;
  pcr->KdVersionBlock = &KdVersionBlock;
  pcr->Prcb.CurrentThread = (KTHREAD*)built[0].threads[0].ethread;
  pcr->Prcb.IdleThread = (KTHREAD*)built[0].threads[0].ethread;
  KiProcessorBlock[0] = &pcr->Prcb;
  build_debugger_data(encoded);
  report(encoded);

  struct {
    USHORT limit;
    ULONG64 base;
  } __attribute__((packed)) gdtr = {sizeof(KiGdt) - 1, (ULONG64)KiGdt};
  __asm__ volatile("lgdt %0" : : "m"(gdtr));
  const ULONG64 pcr_va = (ULONG64)pcr;
  __asm__ volatile("wrmsr" : : "c"(0xC0000101u), "a"((ULONG)pcr_va), "d"((ULONG)(pcr_va >> 32)));
  /* The first System thread's stack with a zero return address (the end of unwinding), written
   * through the identity map before the switch to the kernel's own page tables. */
  const ULONG64 rsp = built[0].threads[0].stack_base - 0x38;
  *(ULONG64*)NPP_PTR(rsp) = 0;
  __asm__ volatile(
      "mov %1, %%cr3\n\t"
      "mov %0, %%rsp\n\t"
      "jmp *%2"
      :
      : "r"(rsp), "r"(system_pml4), "r"((ULONG64)&KiStartSystemThread)
      : "memory");
  for (;;) {
  }
}
