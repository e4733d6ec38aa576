/* The toolhost test guest: a multiboot kernel that QEMU boots with `-kernel`.
 *
 * It enters long mode with 4-level paging that mixes 4 KiB, 2 MiB and 1 GiB leaves, writes the
 * patterns of guest_layout.h through those mappings, says "toolhost-guest: ready" on COM1 and
 * then calls guest_tick() forever, so breakpoints have something to hit. */
#include "guest_layout.h"
#include "long_mode.h"

#define PT_PML4 0x110000
#define PT_PDPT_LOW 0x111000
#define PT_PD_LOW 0x112000
#define PT_PT_LOW 0x113000
#define PT_PDPT_4K 0x114000
#define PT_PD_4K 0x115000
#define PT_PT_4K 0x116000
#define PT_PDPT_2M 0x117000
#define PT_PD_2M 0x118000
#define PT_PDPT_1G 0x119000
#define PT_END 0x11a000

#define PRESENT_RW 0x3
#define LARGE 0x80
#define NX_HIGH 0x80000000 /* bit 63, in the upper dword */

   MULTIBOOT_HEADER

   .section .boot, "ax"
   .code32
   .global guest_entry
guest_entry:
   cli
   mov $stack_top, %esp

   ZERO_TABLES(PT_PML4, PT_END)

   ENTRY(PT_PML4, 0, PT_PDPT_LOW + PRESENT_RW, 0)
   ENTRY(PT_PML4, 288, PT_PDPT_4K + PRESENT_RW, 0)
   ENTRY(PT_PML4, 320, PT_PDPT_2M + PRESENT_RW, 0)
   ENTRY(PT_PML4, 384, PT_PDPT_1G + PRESENT_RW, 0)

   /* Identity: [0, 2 MiB) in 4 KiB pages, [2 MiB, 64 MiB) in 2 MiB pages. */
   ENTRY(PT_PDPT_LOW, 0, PT_PD_LOW + PRESENT_RW, 0)
   ENTRY(PT_PD_LOW, 0, PT_PT_LOW + PRESENT_RW, 0)
   mov $PT_PT_LOW, %edi
   mov $PRESENT_RW, %eax
   mov $512, %ecx
1: mov %eax, (%edi)
   add $0x1000, %eax
   add $8, %edi
   loop 1b
   mov $(PT_PD_LOW + 8), %edi
   mov $(0x200000 + LARGE + PRESENT_RW), %eax
   mov $31, %ecx
2: mov %eax, (%edi)
   add $0x200000, %eax
   add $8, %edi
   loop 2b

   /* 4 KiB pattern pages, in reverse physical order. */
   ENTRY(PT_PDPT_4K, 1, PT_PD_4K + PRESENT_RW, 0)
   ENTRY(PT_PD_4K, 3, PT_PT_4K + PRESENT_RW, 0)
   ENTRY(PT_PT_4K, 3, GUEST_P4K_PA + PRESENT_RW, 0)
   ENTRY(PT_PT_4K, 4, GUEST_P4K_PA2 + PRESENT_RW, 0)

   /* One 2 MiB page, no-execute. */
   ENTRY(PT_PDPT_2M, 3, PT_PD_2M + PRESENT_RW, 0)
   ENTRY(PT_PD_2M, 5, GUEST_P2M_PAGE_PA + LARGE + PRESENT_RW, NX_HIGH)

   /* Two 1 GiB pages: PA 0 and PA 4 GiB. */
   ENTRY(PT_PDPT_1G, 0, 0 + LARGE + PRESENT_RW, 0)
   ENTRY(PT_PDPT_1G, 4, 0 + LARGE + PRESENT_RW, 1)

   ENTER_LONG_MODE(PT_PML4, 0x80000001 /* PG | PE */, long_entry)

   .code64
long_entry:
   LONG_MODE_SEGMENTS(stack_top)

   /* fill(va, len, mul, add, signature) */
#define FILL(va, len, mul, add, sig) \
   movabs $(va), %rdi; mov $(len), %ecx; mov $(mul), %r8d; mov $(add), %r9d; mov $sig, %esi; call fill_pattern

   FILL(GUEST_P4K_VA, GUEST_P4K_LEN, GUEST_P4K_MUL, GUEST_P4K_ADD, sig_4k)
   FILL(GUEST_P2M_VA, GUEST_P2M_LEN, GUEST_P2M_MUL, GUEST_P2M_ADD, sig_2m)
   FILL(GUEST_P1G_VA, GUEST_P1G_LEN, GUEST_P1G_MUL, GUEST_P1G_ADD, sig_1g)
   FILL(GUEST_PHI_VA, GUEST_PHI_LEN, GUEST_PHI_MUL, GUEST_PHI_ADD, sig_hi)

   movabs $GUEST_READY_MAGIC, %rax
   mov %rax, GUEST_READY
   mov $ready_text, %esi
   call serial_print

   movabs $GUEST_R12, %r12
   movabs $GUEST_R13, %r13
   movabs $GUEST_R14, %r14
   movabs $GUEST_R15, %r15
main_loop:
   call guest_tick
   pause
   jmp main_loop

/* Writes byte k = (k * r8 + r9) & 0xff for k in [0, ecx) at rdi, then 16 bytes from rsi. */
fill_pattern:
   xor %edx, %edx
1: mov %edx, %eax
   imul %r8d, %eax
   add %r9d, %eax
   mov %al, (%rdi, %rdx)
   inc %edx
   cmp %ecx, %edx
   jb 1b
   mov $16, %ecx
   rep movsb
   ret

/* Writes the NUL-terminated string at rsi to COM1. */
serial_print:
   mov $0x3f8, %dx
1: lodsb
   test %al, %al
   jz 2f
   out %al, %dx
   jmp 1b
2: ret

   .section .tick, "ax"
   .global guest_tick
guest_tick:
   push %rbp
   mov %rsp, %rbp
   incq GUEST_COUNTER
   mov GUEST_COUNTER, %rax
   pop %rbp
   ret

   .data
   .align 8
counter: .quad 0          /* GUEST_COUNTER */
ready: .quad 0            /* GUEST_READY */
   GDT_DATA
sig_4k: .ascii GUEST_P4K_SIG
sig_2m: .ascii GUEST_P2M_SIG
sig_1g: .ascii GUEST_P1G_SIG
sig_hi: .ascii GUEST_PHI_SIG
ready_text: .asciz "toolhost-guest: ready\n"

   .bss
   .align 16
stack: .skip 0x8000
stack_top:
