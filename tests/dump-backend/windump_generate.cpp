// Writes the generator's sample Windows dump of a given type to a file, for the MCP-level
// test (mcp.test.mjs):  toolhost_windump_generate TYPE PATH
#include <cstdio>
#include <cstdlib>

#include "windump_generator.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: toolhost_windump_generate TYPE PATH\n");
    return 2;
  }
  const auto bytes = toolhost::test::generate_dump(toolhost::test::sample_system(static_cast<uint32_t>(std::atoi(argv[1]))));
  FILE* f = std::fopen(argv[2], "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) return 1;
  return std::fclose(f) == 0 ? 0 : 1;
}
