/* The benchmark's debuggee: fills a 16 MiB buffer, then stops in ready() for the readers. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define BIG_SIZE (16u << 20)
unsigned char big[BIG_SIZE];

__attribute__((noinline)) void ready(void) { __asm__ volatile("" ::: "memory"); }

int main(void) {
  for (uint32_t i = 0; i < BIG_SIZE; ++i) big[i] = (unsigned char)(i * 131u + (i >> 12));
  ready();
  for (;;) pause();
}
