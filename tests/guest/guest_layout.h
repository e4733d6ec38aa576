/* The test guest's memory layout: what tests may rely on (see README.md here).
 *
 * Usable from C, C++ and the guest's assembly. guest_layout.json carries the same facts for
 * scripts; tests/guest/check-guest compares both with a live guest through QEMU's gdbstub. */
#ifndef TOOLHOST_TESTS_GUEST_LAYOUT_H
#define TOOLHOST_TESTS_GUEST_LAYOUT_H

#ifdef __ASSEMBLER__
#define GUEST_U64(x) x
#else
#define GUEST_U64(x) x##ULL
#endif

/* Physical layout of the image (identity-mapped: VA == PA below 64 MiB). */
#define GUEST_IMAGE_BASE GUEST_U64(0x100000)
#define GUEST_TICK_FUNCTION GUEST_U64(0x101000)         /* guest_tick(): called forever by the main loop */
#define GUEST_COUNTER GUEST_U64(0x108000)               /* u64, incremented by every guest_tick() */
#define GUEST_READY GUEST_U64(0x108008)                 /* u64, GUEST_READY_MAGIC once the patterns are written */
#define GUEST_READY_MAGIC GUEST_U64(0x5944414552545347) /* "GSTREADY" little-endian */
#define GUEST_CR3 GUEST_U64(0x110000)                   /* the PML4 (CR3 value of the running guest) */
#define GUEST_IDENTITY_END \
  GUEST_U64(0x4000000) /* VA == PA for [0, 64 MiB): 4 KiB pages below 2 MiB, 2 MiB pages above */

/* Registers the main loop never changes after setup (the guest sits in its main loop). */
#define GUEST_R12 GUEST_U64(0x1212121212121212)
#define GUEST_R13 GUEST_U64(0x1313131313131313)
#define GUEST_R14 GUEST_U64(0x0123456789abcdef)
#define GUEST_R15 GUEST_U64(0xfedcba9876543210)

/* Each pattern: PATTERN_VA maps to PATTERN_PA through a page of PATTERN_PAGE bytes. The guest
 * writes LEN bytes starting at VA (through the mapping): byte k is (k * MUL + ADD) & 0xff, then
 * the 16-byte signature over the first 16 bytes. */

/* 4 KiB pages, deliberately non-contiguous: VA page 0 -> PA 0x305000, VA page 1 -> PA 0x302000. */
#define GUEST_P4K_VA GUEST_U64(0xffff900040603000)
#define GUEST_P4K_PA GUEST_U64(0x305000)
#define GUEST_P4K_PA2 GUEST_U64(0x302000) /* physical page behind GUEST_P4K_VA + 0x1000 */
#define GUEST_P4K_PAGE GUEST_U64(0x1000)
#define GUEST_P4K_LEN 8192
#define GUEST_P4K_MUL 7
#define GUEST_P4K_ADD 0x4b
#define GUEST_P4K_SIG "TOOLHOST-4K-PAGE"

/* A 2 MiB page (marked no-execute): VA 0xffffa000c0a00000 -> PA 0x400000; the pattern sits at
 * offset 0x1ff000 inside it (the page's last 4 KiB). */
#define GUEST_P2M_VA GUEST_U64(0xffffa000c0bff000)
#define GUEST_P2M_PA GUEST_U64(0x5ff000)
#define GUEST_P2M_PAGE GUEST_U64(0x200000)
#define GUEST_P2M_PAGE_VA GUEST_U64(0xffffa000c0a00000)
#define GUEST_P2M_PAGE_PA GUEST_U64(0x400000)
#define GUEST_P2M_LEN 4096
#define GUEST_P2M_MUL 13
#define GUEST_P2M_ADD 0x11
#define GUEST_P2M_SIG "TOOLHOST-2M-PAGE"

/* A 1 GiB page: VA 0xffffc00000000000 -> PA 0 (the first GiB); pattern at PA 8 MiB. */
#define GUEST_P1G_VA GUEST_U64(0xffffc00000800000)
#define GUEST_P1G_PA GUEST_U64(0x800000)
#define GUEST_P1G_PAGE GUEST_U64(0x40000000)
#define GUEST_P1G_PAGE_VA GUEST_U64(0xffffc00000000000)
#define GUEST_P1G_LEN 4096
#define GUEST_P1G_MUL 3
#define GUEST_P1G_ADD 0x5a
#define GUEST_P1G_SIG "TOOLHOST-1G-PAGE"

/* A second 1 GiB page: VA 0xffffc00100000000 -> PA 4 GiB. The pattern lands in RAM only when
 * the guest has RAM above 4 GiB (e.g. `-m 4608M` on `pc`), for tests of the high RAM split. */
#define GUEST_PHI_VA GUEST_U64(0xffffc00100001000)
#define GUEST_PHI_PA GUEST_U64(0x100001000)
#define GUEST_PHI_LEN 4096
#define GUEST_PHI_MUL 5
#define GUEST_PHI_ADD 0x77
#define GUEST_PHI_SIG "TOOLHOST-HIGHMEM"

/* A VA that is not mapped at all (PML4 entry absent). */
#define GUEST_UNMAPPED_VA GUEST_U64(0xffff800000000000)

#endif /* TOOLHOST_TESTS_GUEST_LAYOUT_H */
