/* The program the gdb-backend and debugger tests debug under gdbserver.
 * Built without optimisation and with frame pointers so that its stack is a plain rbp chain. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned char message[16];
volatile uint64_t marker;
volatile uint64_t counter;

__attribute__((noinline)) void fill_message(volatile unsigned char* out) {
  const char* text = "hello, world";
  for (int i = 0; text[i] != 0; ++i) out[i] = (unsigned char)text[i];
  out[12] = 0;
  marker = 0x1122334455667788ull;
}

__attribute__((noinline)) int step_target(int x) {
  int y = x * 3;
  y += 7;
  return y;
}

__attribute__((noinline)) void report(void) {
  printf("message=%s\n", (const char*)message);
  fflush(stdout);
}

/* Runs until stopped from outside; gives up after a minute so a lost test cannot leave it behind. */
__attribute__((noinline)) void spin(void) {
  const time_t start = time(NULL);
  for (;;) {
    counter++;
    if ((counter & 0xfffffff) == 0 && time(NULL) - start > 60) exit(1);
  }
}

int main(int argc, char** argv) {
  fill_message(message);
  int value = step_target(5);
  if (argc > 1 && strcmp(argv[1], "slow") == 0) usleep(400000);
  report();
  printf("value=%d\n", value);
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "spin") == 0) spin();
  return 0;
}
