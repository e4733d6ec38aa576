/* A program for the gcore test: fills memory with known patterns, writes their addresses to
 * the file named by argv[1], starts a second thread, and stops itself with SIGUSR1 so that gdb
 * (which runs it) can write a core. Byte k of region r is (k * (r + 3) + r) & 0xff. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static unsigned char global_area[5000];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static void fill(unsigned char* p, size_t n, int region) {
  for (size_t k = 0; k < n; ++k) p[k] = (unsigned char)((k * (size_t)(region + 3) + (size_t)region) & 0xff);
}

static void* sleeper(void* arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  for (;;) pthread_cond_wait(&never, &lock);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: core_target ADDRESS-FILE\n");
    return 2;
  }
  size_t heap_size = 70000;
  unsigned char* heap = malloc(heap_size);
  size_t map_size = 3 * 4096;
  unsigned char* map = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (heap == NULL || map == MAP_FAILED) return 1;
  fill(heap, heap_size, 0);
  fill(map, map_size, 1);
  fill(global_area, sizeof global_area, 2);
  pthread_t thread;
  pthread_create(&thread, NULL, sleeper, NULL);
  FILE* out = fopen(argv[1], "w");
  if (out == NULL) return 1;
  fprintf(out, "0 %p %zu\n1 %p %zu\n2 %p %zu\n", (void*)heap, heap_size, (void*)map, map_size, (void*)global_area,
          sizeof global_area);
  fclose(out);
  usleep(100000); /* let the second thread block */
  raise(SIGUSR1);
  return 0;
}
