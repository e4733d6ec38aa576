// Benchmark helper for bench/dump-backend/run.
//   dump_bench hog ADDRESS-FILE      maps 1 GiB, fills it, writes its address, stops (SIGUSR1)
//   dump_bench read CORE ADDRESS N   N random 4 KiB reads inside the 1 GiB at ADDRESS through
//                                    the dump backend's debug-target session; prints reads/s
#include <signal.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <toolhost/snapshot/session.hpp>
#include "open_dump.hpp"

namespace {

constexpr uint64_t kSize = 1ull << 30;

int hog(const char* address_file) {
  void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  auto* bytes = static_cast<uint64_t*>(p);
  for (uint64_t i = 0; i < kSize / 8; ++i) bytes[i] = i * 0x9e3779b97f4a7c15ull;
  FILE* f = std::fopen(address_file, "w");
  if (f == nullptr) return 1;
  std::fprintf(f, "%p\n", p);
  std::fclose(f);
  raise(SIGUSR1);
  return 0;
}

int read_core(const char* core, uint64_t base, uint64_t count) {
  const auto opening = std::chrono::steady_clock::now();
  auto snap = toolhost::dump_backend::open_dump(core);
  const double open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - opening).count();
  if (!snap.ok()) {
    std::fprintf(stderr, "%s\n", std::string(snap.status().message()).c_str());
    return 1;
  }
  toolhost_debug_target_t* t = toolhost::snapshots::make_target(std::move(*snap));
  std::mt19937_64 random(12345);
  std::vector<uint8_t> page(4096);
  uint64_t checksum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t address = base + (random() % (kSize / 4096)) * 4096;
    size_t done = 0;
    if (t->read_memory(t, TOOLHOST_DT_VIRTUAL, address, page.data(), page.size(), &done, nullptr) != TOOLHOST_OK ||
        done != page.size()) {
      std::fprintf(stderr, "read at 0x%llx failed\n", static_cast<unsigned long long>(address));
      return 1;
    }
    uint64_t first;
    std::memcpy(&first, page.data(), 8);
    if (first != ((address - base) / 8) * 0x9e3779b97f4a7c15ull) {
      std::fprintf(stderr, "wrong bytes at 0x%llx\n", static_cast<unsigned long long>(address));
      return 1;
    }
    checksum += first;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.0f %.0f\n", static_cast<double>(count) / seconds, open_ms);
  t->close(t);
  return checksum == 42 ? 2 : 0;  // keeps the reads from being optimized away
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "hog") == 0) return hog(argv[2]);
  if (argc == 5 && std::strcmp(argv[1], "read") == 0) {
    return read_core(argv[2], std::strtoull(argv[3], nullptr, 16), std::strtoull(argv[4], nullptr, 10));
  }
  std::fprintf(stderr, "usage: dump_bench hog ADDRESS-FILE | dump_bench read CORE ADDRESS COUNT\n");
  return 2;
}
