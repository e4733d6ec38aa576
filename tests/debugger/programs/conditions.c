/* Every condition code as a jump, a set and a conditional move, for `uf`'s spelling of them
 * against GNU objdump's (WinDbg's: jg, not Zydis's jnle). */
#define EACH(op, ...) \
  op##o __VA_ARGS__;  \
  op##no __VA_ARGS__; \
  op##b __VA_ARGS__;  \
  op##ae __VA_ARGS__; \
  op##e __VA_ARGS__;  \
  op##ne __VA_ARGS__; \
  op##be __VA_ARGS__; \
  op##a __VA_ARGS__;  \
  op##s __VA_ARGS__;  \
  op##ns __VA_ARGS__; \
  op##p __VA_ARGS__;  \
  op##np __VA_ARGS__; \
  op##l __VA_ARGS__;  \
  op##ge __VA_ARGS__; \
  op##le __VA_ARGS__; \
  op##g __VA_ARGS__;
#define STR(...) #__VA_ARGS__
#define XSTR(...) STR(__VA_ARGS__)
__asm__(".text\n"
        ".globl conditions\n"
        ".type conditions, @function\n"
        "conditions:\n"
        XSTR(EACH(j, 1f)) "\n"
        "1:\n"
        XSTR(EACH(set, %al)) "\n"
        XSTR(EACH(cmov, %rcx, %rax)) "\n"
        "  jrcxz 2f\n"
        "2:\n"
        "  ret\n"
        ".size conditions, .-conditions\n");

long conditions(void);

int main(void) { return (int)conditions(); }
