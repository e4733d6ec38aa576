// Test helper: gdb as the oracle. Runs `gdb -nx -batch` with the given commands on a program
// (started by a `run` among them) or on a core of it, and returns what gdb printed.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

namespace toolhost::testing {

inline std::string gdb_batch(const std::string& program, const std::vector<std::string>& commands,
                             const std::string& core = "") {
  std::string command = "gdb -nx -batch";
  for (const auto& c : commands) command += " -ex '" + c + "'";
  command += core.empty() ? " --args '" + program + "'" : " '" + program + "' '" + core + "'";
  command += " 2>&1 </dev/null";
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), p)) out.append(buffer.data(), n);
  pclose(p);
  return out;
}

}  // namespace toolhost::testing
