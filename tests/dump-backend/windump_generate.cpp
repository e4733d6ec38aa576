// Writes the generator's sample Windows dump of a given type to a file, for the MCP-level
// test (mcp.test.mjs) and the fuzzer's seeds:  toolhost_windump_generate TYPE PATH [small]
// ("small" leaves out the page at 1 GiB, so bitmap dumps stay small)
#include <cstdio>
#include <cstdlib>

#include "windump_generator.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: toolhost_windump_generate TYPE PATH [small]\n");
    return 2;
  }
  auto spec = toolhost::test::sample_system(static_cast<uint32_t>(std::atoi(argv[1])));
  if (argc == 4) spec.pages.erase(0x40007);
  const auto bytes = toolhost::test::generate_dump(spec);
  FILE* f = std::fopen(argv[2], "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) return 1;
  return std::fclose(f) == 0 ? 0 : 1;
}
