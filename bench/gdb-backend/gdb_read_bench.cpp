// Reads 16 MiB from a process under gdbserver through the gdb backend and prints MiB/s.
//   gdb_read_bench HOST:PORT ADDRESS SIZE REPEATS
// The process must already be stopped where ADDRESS is readable; the best of REPEATS counts.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <toolhost/sdk/writer.hpp>

#include "target_adapter.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: gdb_read_bench HOST:PORT ADDRESS SIZE REPEATS\n");
    return 2;
  }
  const uint64_t address = std::strtoull(argv[2], nullptr, 0);
  const size_t size = std::strtoull(argv[3], nullptr, 0);
  const int repeats = std::atoi(argv[4]);
  const auto* factory = toolhost::gdb::factory();
  toolhost::sdk::string_writer error;
  toolhost_debug_target_t* t = factory->open(factory, argv[1], nullptr, nullptr, 10000, error.raw());
  if (t == nullptr) {
    std::fprintf(stderr, "open failed: %s\n", error.text().c_str());
    return 1;
  }
  std::vector<uint8_t> buffer(size);
  double best = 1e99;
  uint64_t checksum = 0;
  for (int i = 0; i < repeats; ++i) {
    size_t done = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto code = t->read_memory(t, TOOLHOST_DT_VIRTUAL, address, buffer.data(), size, &done, error.raw());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (code != TOOLHOST_OK || done != size) {
      std::fprintf(stderr, "read failed after %zu bytes: %s\n", done, error.text().c_str());
      return 1;
    }
    best = std::min(best, seconds);
  }
  for (size_t i = 0; i < size; i += 4096) checksum += buffer[i];
  std::printf("%.6f %llu\n", best, static_cast<unsigned long long>(checksum));
  // Leave the process stopped for the next reader: drop the connection without detaching.
  std::fflush(stdout);
  std::_Exit(0);
}
