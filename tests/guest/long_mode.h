/* What both test guests (guest.S and windows/boot.S) do to get from QEMU's multiboot loader to
 * 64-bit code: the multiboot header, page-table entries written from 32-bit code, and the switch
 * to long mode with a flat GDT. For the assembler through `cpp -x assembler-with-cpp`; each macro
 * is a sequence of statements separated by ';'. QEMU's multiboot loader takes only 32-bit ELF
 * images, so the object is ELF32 with a .code64 part. */
#ifndef TOOLHOST_GUEST_LONG_MODE_H
#define TOOLHOST_GUEST_LONG_MODE_H

/* The multiboot (v1) header: magic, no flags, checksum. */
#define MULTIBOOT_HEADER \
   .section .multiboot, "a"; .align 4; .long 0x1BADB002; .long 0; .long -0x1BADB002

/* entry(table, index, low dword, high dword) */
#define ENTRY(table, index, lo, hi) \
   movl $(lo), (table + (index) * 8); \
   movl $(hi), (table + (index) * 8 + 4)

/* Zeroes the page tables in [from, to): RAM is zero at power-on, but not after a reset. */
#define ZERO_TABLES(from, to) \
   mov $(from), %edi; mov $(((to) - (from)) / 4), %ecx; xor %eax, %eax; rep stosl

/* From 32-bit protected mode into long mode with the PML4 at `pml4`: PAE, EFER.LME and NXE, then
 * CR0 |= `cr0_bits` (PG | PE, and WP where the guest wants it), and a far jump to `target` in the
 * 64-bit code segment of GDT_DATA's table. */
#define ENTER_LONG_MODE(pml4, cr0_bits, target) \
   mov $(pml4), %eax; mov %eax, %cr3; \
   mov %cr4, %eax; or $0x20, %eax; mov %eax, %cr4; \
   mov $0xC0000080, %ecx; rdmsr; or $0x900, %eax; wrmsr; \
   mov %cr0, %eax; or $(cr0_bits), %eax; mov %eax, %cr0; \
   lgdt gdt_pointer; ljmp $0x08, $target

/* The first instructions in 64-bit code: the data segment everywhere, and the stack at `top`. */
#define LONG_MODE_SEGMENTS(top) \
   mov $0x10, %ax; mov %ax, %ds; mov %ax, %es; mov %ax, %ss; mov %ax, %fs; mov %ax, %gs; \
   mov $top, %esp

/* The flat GDT: 0x08 64-bit code, 0x10 data. */
#define GDT_DATA \
   .align 8; \
gdt: .quad 0; .quad 0x00AF9A000000FFFF; .quad 0x00CF92000000FFFF; \
gdt_end: ; \
gdt_pointer: .word gdt_end - gdt - 1; .long gdt

#endif
