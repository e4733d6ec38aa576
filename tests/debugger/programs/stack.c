/* The program the stack tests stop at (built -O0 and -O2): a recursion that reaches a leaf, which
 * calls into libc (sleep, read from a pipe) and raises a signal whose handler runs on the same
 * stack. `stack deep` recurses 18 levels, for a 20-frame stack below main. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct point {
  int x;
  short y;
  char tag[3];
  double weight;
  struct point* next;
  unsigned flags : 3;
  unsigned mode : 5;
  union {
    int as_int;
    float as_float;
  } u;
  enum colour { red, green = 5, blue } colour;
};

volatile int sink;

__attribute__((noinline)) void on_usr1(int signo) { sink = signo; }

__attribute__((noinline)) int leaf(int n, struct point* p) {
  int local = n * 2 + p->y;
  char buffer[4];
  int fds[2];
  p->x = local;
  if (pipe(fds) == 0) {
    (void)write(fds[1], "abc", 3);
    sink = (int)read(fds[0], buffer, sizeof buffer);
    close(fds[0]);
    close(fds[1]);
  }
  usleep(1000);
  raise(SIGUSR1);
  return local + sink;
}

__attribute__((noinline)) int recurse(int n, struct point* p) {
  if (n == 0) return leaf(n, p);
  int r = recurse(n - 1, p);
  sink = r;
  return r + 1;
}

int main(int argc, char** argv) {
  struct point pt = {1, 2, "ab", 3.5, 0, 5, 9, {7}, blue};
  signal(SIGUSR1, on_usr1);
  const int depth = argc > 1 && strcmp(argv[1], "deep") == 0 ? 18 : 3;
  printf("%d\n", recurse(depth, &pt));
  return 0;
}
