/* The Windows-shaped test guest's boot stub: a multiboot kernel (ELF32, like ../guest.S) that
 * carries ntoskrnl.exe, hal.dll and thdrv.sys at fixed physical addresses (winguest.h), enters
 * long mode with an identity map of the first 64 MiB plus ntoskrnl's VA range, and calls the
 * image's entry point, KiSystemStartup(multiboot information). */
#include "winguest.h"
#include "../long_mode.h"

#define PT_PML4 0x110000
#define PT_PDPT_LOW 0x111000
#define PT_PD_LOW 0x112000
#define PT_PDPT_NTOS 0x113000
#define PT_PD_NTOS 0x114000
#define PT_END 0x115000

/* WG_NTOS_BASE's PML4, PDPT and PD indexes (checked by the kernel's own mapping). */
#define NTOS_PML4_INDEX 0x1f0
#define NTOS_PDPT_INDEX 0xc
#define NTOS_PD_INDEX 0x90

   MULTIBOOT_HEADER

   .section .boot, "ax"
   .code32
   .global boot_entry
boot_entry:
   cli
   mov $stack_top, %esp
   mov %ebx, multiboot_info

   ZERO_TABLES(PT_PML4, PT_END)

   /* [0, 64 MiB) identity, 2 MiB pages. */
   ENTRY(PT_PML4, 0, PT_PDPT_LOW + 3, 0)
   ENTRY(PT_PDPT_LOW, 0, PT_PD_LOW + 3, 0)
   mov $PT_PD_LOW, %edi
   mov $0x83, %eax
   mov $32, %ecx
1: mov %eax, (%edi)
   add $0x200000, %eax
   add $8, %edi
   loop 1b
   /* ntoskrnl: one 2 MiB page at its base. */
   ENTRY(PT_PML4, NTOS_PML4_INDEX, PT_PDPT_NTOS + 3, 0)
   ENTRY(PT_PDPT_NTOS, NTOS_PDPT_INDEX, PT_PD_NTOS + 3, 0)
   ENTRY(PT_PD_NTOS, NTOS_PD_INDEX, WG_NTOS_PA + 0x83, 0)

   ENTER_LONG_MODE(PT_PML4, 0x80010001 /* PG | WP | PE */, long_entry)

   .code64
long_entry:
   LONG_MODE_SEGMENTS(stack_top)
   /* entry = WG_NTOS_BASE + OptionalHeader.AddressOfEntryPoint */
   mov $WG_NTOS_PA, %esi
   mov 0x3c(%rsi), %eax
   mov 0x28(%rsi, %rax), %eax
   movabs $WG_NTOS_BASE, %rdx
   add %rdx, %rax
   mov $multiboot_info, %ecx
   mov (%rcx), %ecx
   sub $40, %rsp             /* the Windows x64 ABI's home space, rsp 16-aligned at the call */
   call *%rax
1: cli
   hlt
   jmp 1b

   .data
   .align 8
multiboot_info: .long 0
   GDT_DATA

   .section .ntos, "a"
   .incbin "ntoskrnl.exe"
   .section .hal, "a"
   .incbin "hal.dll"
   .section .driver, "a"
   .incbin "thdrv.sys"

   .bss
   .align 16
stack: .skip 0x10000
stack_top:
