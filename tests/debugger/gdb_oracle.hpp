// Test helper: gdb as the oracle. Runs `gdb -nx -batch` with the given commands on a program
// (started by a `run` among them) or on a core of it, and returns what gdb printed.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <ostream>
#include <regex>
#include <sstream>
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

// One frame of a backtrace: the function, the source file's base name and the line.
struct frame_name {
  std::string function;
  std::string file;
  int line = 0;
  bool operator==(const frame_name&) const = default;
};

inline std::ostream& operator<<(std::ostream& o, const frame_name& f) {
  return o << f.function << " " << f.file << ":" << f.line;
}

inline std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The frames of gdb's `bt` output (#N lines) in `text`.
inline std::vector<frame_name> parse_backtrace(const std::string& text) {
  std::vector<frame_name> frames;
  const std::regex row(R"(^#\d+\s+(?:0x[0-9a-f]+ in )?(<signal handler called>|\S+)(?: \(.*\))?(?: at (\S+):(\d+))?)");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    frames.push_back({m[1], m[2].matched ? base_name(m[2]) : "", m[3].matched ? std::stoi(m[3]) : 0});
  }
  return frames;
}

}  // namespace toolhost::testing
