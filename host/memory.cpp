#include "host/memory.hpp"

#include <malloc.h>

#include <atomic>
#include <chrono>

namespace toolhost::memory {
namespace {

constexpr auto kSettle = std::chrono::milliseconds(200);
// Steady-clock ticks of the last release; 0 when nothing waits to be trimmed.
std::atomic<std::chrono::steady_clock::rep> g_released{0};

}  // namespace

void limit_arenas() { mallopt(M_ARENA_MAX, 1); }

void note_release() { g_released.store(std::chrono::steady_clock::now().time_since_epoch().count()); }

void trim_if_due() {
  auto released = g_released.load(std::memory_order_relaxed);
  if (released == 0) return;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (now - released < std::chrono::duration_cast<std::chrono::steady_clock::duration>(kSettle).count()) return;
  if (!g_released.compare_exchange_strong(released, 0)) return;  // a later release: wait for it
  malloc_trim(0);
}

}  // namespace toolhost::memory
