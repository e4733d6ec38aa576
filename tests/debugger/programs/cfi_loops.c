/* Unwind data that never reaches main, for the walker's bounds: runaway's CFI says its caller is
 * itself (the return address rule is "the current pc"; stopped after its first byte, that address
 * is inside it again), 16 bytes further up the stack, for ever; standstill's says its caller's
 * stack pointer is its own. */
__asm__(
    ".text\n"
    ".globl runaway\n"
    ".type runaway, @function\n"
    "runaway:\n"
    "  .cfi_startproc\n"
    "  .cfi_def_cfa_offset 16\n"
    /* DW_CFA_val_expression, register 16 (rip), 2 bytes: DW_OP_breg16 0 */
    "  .cfi_escape 0x16, 0x10, 0x02, 0x80, 0x00\n"
    "  nop\n"
    "  ret\n"
    "  .cfi_endproc\n"
    ".size runaway, .-runaway\n"
    ".globl standstill\n"
    ".type standstill, @function\n"
    "standstill:\n"
    "  .cfi_startproc\n"
    "  .cfi_def_cfa rsp, 0\n"
    "  nop\n"
    "  ret\n"
    "  .cfi_endproc\n"
    ".size standstill, .-standstill\n");

void runaway(void);
void standstill(void);

int main(void) {
  runaway();
  standstill();
  return 0;
}
