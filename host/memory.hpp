// Giving freed heap back to the system once a burst is over. glibc keeps what a burst freed:
// each thread caches freed blocks for itself (tcache) until it exits, and free space between
// blocks still in use stays resident until malloc_trim() madvises it away. The threads that did
// the burst's work retire or are replaced by fresh ones when they go idle (worker_pool, the HTTP
// I/O threads), and each says so here; the next quiet moment after the last of them has gone
// trims the heap once. [any-thread]
#pragma once

namespace toolhost::memory {

// Keeps every thread on glibc's one main heap, set before the threads start. By default glibc
// gives threads up to 8 heaps per core; after the HTTP load test 14 heaps each kept a few pages
// resident between the blocks still in use (7.4 MiB RSS 30 s after the load, 6.9 MiB with two
// heaps). With one heap the blocks a burst leaves behind share pages instead of spreading over
// two: the heap's resident pages after the load are 24-88 KiB above a never-used server's, 188
// KiB with two heaps. Calls per second did not drop (bench/mcp, 16 HTTP clients: 24.4k, 21.6-22.9k
// with two heaps): a thread's own cache (tcache) serves most allocations without the heap's lock.
void limit_arenas();

// A thread holding a burst's freed blocks is about to exit: its cache returns to the heap.
void note_release();

// Trims the heap when something was released and the last release is at least 200 ms old (the
// exiting threads are gone by then). Cheap when there is nothing to do: call it from idle paths.
void trim_if_due();

}  // namespace toolhost::memory
