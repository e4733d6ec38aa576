// make_kernel_dump OUT.dmp: writes the symbol tests' fixture kernel (kernel_dump.hpp) as a
// Windows crash dump, for the MCP tests.
#include <cstdio>

#include "kernel_dump.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_kernel_dump OUT.dmp\n");
    return 2;
  }
  try {
    const std::string made = toolhost::test::windows::make_kernel_dump("mcp.dmp");
    std::filesystem::rename(made, argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_kernel_dump: %s\n", e.what());
    return 1;
  }
  return 0;
}
