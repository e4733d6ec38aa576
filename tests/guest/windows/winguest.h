/* The Windows-shaped test guest's fixed physical and virtual layout, shared by the boot stub
 * (boot.S, through cpp) and the kernel (ntoskrnl.c). Everything the kernel builds from these
 * (processes, threads, modules, page tables) it reports itself on COM1 as a JSON layout; tests
 * read that report, and check-winguest checks it against the PE images, the PDBs and guest memory.
 *
 * Physical memory (identity-mapped by the boot stub, then unmapped when the kernel switches to
 * its own page tables):
 *   0x100000  boot stub (multiboot header, 32-bit code, boot page tables)
 *   0x400000  ntoskrnl.exe, as linked (file offset == RVA, so the file is the loaded image)
 *   0x500000  hal.dll          0x540000  thdrv.sys
 *   0x600000  page-table pool  (every table the kernel builds)
 *   0x800000  non-paged pool   (EPROCESS, ETHREAD, loader entries, stacks; one 2 MiB page)
 *   0xa00000  user pages       (PEB, TEB, images, the per-process pattern page, KUSER_SHARED_DATA)
 *   0xc00000  paged pool       (4 KiB pages, with a transition and a paged-out PTE) */
#ifndef TOOLHOST_WINGUEST_H
#define TOOLHOST_WINGUEST_H

#ifdef __ASSEMBLER__
#define WG_U64(x) x
#else
#define WG_U64(x) x##ULL
#endif

#define WG_NTOS_PA WG_U64(0x400000)
#define WG_HAL_PA WG_U64(0x500000)
#define WG_DRIVER_PA WG_U64(0x540000)
#define WG_TABLE_POOL_PA WG_U64(0x600000)
#define WG_TABLE_POOL_END WG_U64(0x800000)
#define WG_NPP_PA WG_U64(0x800000)
#define WG_USER_POOL_PA WG_U64(0xa00000)
#define WG_USER_POOL_END WG_U64(0xc00000)
#define WG_PAGED_PA WG_U64(0xc00000)

/* Preferred (and only) bases: the images are linked /fixed there. */
#define WG_NTOS_BASE WG_U64(0xfffff80312000000)
#define WG_HAL_BASE WG_U64(0xfffff80312800000)
#define WG_DRIVER_BASE WG_U64(0xfffff80313000000)

#define WG_NPP_VA WG_U64(0xffffc60a00000000)     /* 2 MiB page -> WG_NPP_PA */
#define WG_PAGED_VA WG_U64(0xffffe38000000000)   /* 4 KiB pages -> WG_PAGED_PA */
#define WG_PHYSMAP_VA WG_U64(0xffffb00000000000) /* 1 GiB page -> PA 0 */
#define WG_KUSER_VA WG_U64(0xfffff78000000000)
#define WG_KUSER_USER_VA WG_U64(0x7ffe0000)
/* The PML4 self-map slot: not Windows 10's classic 0x1ed, so discovery cannot assume it. */
#define WG_SELF_MAP_INDEX 0x1a3

#define WG_BUILD_NUMBER 19041

#endif
