// k on a stopped process under gdbserver, from process start to the answer: attaches through
// the gdb backend, runs `k`, prints the frame count, the seconds from main() to the answer and
// those of a second `k` in the same session (symbols and unwind data already read).
//   gdb_stack_bench HOST:PORT
// Leaves the process stopped for the next client (the connection is dropped, not detached).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <toolhost/sdk/json.hpp>

#include "target_adapter.hpp"
#include "tools.hpp"

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  if (argc != 2) {
    std::fprintf(stderr, "usage: gdb_stack_bench HOST:PORT\n");
    return 2;
  }
  toolhost::debugger::debugger_tools tools(
      [](const std::string& name) { return name == "gdb" ? toolhost::gdb::factory() : nullptr; },
      toolhost::debugger::launch_settings{});
  auto opened = tools.open("gdb", argv[1], "");
  if (opened.is_error()) {
    std::fprintf(stderr, "open failed: %s\n", opened.to_json().c_str());
    return 1;
  }
  auto frames_of = [&]() -> int {
    auto k = tools.command("k 0x100", 60000, "json", [] { return false; });
    auto doc = toolhost::sdk::parse_json(k.to_json());
    if (k.is_error() || !doc) return -1;
    return static_cast<int>((*doc)["structuredContent"]["result"]["frames"].Size());
  };
  const int frames = frames_of();
  const double cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto again = std::chrono::steady_clock::now();
  frames_of();
  const double warm = std::chrono::duration<double>(std::chrono::steady_clock::now() - again).count();
  if (frames < 0) {
    std::fprintf(stderr, "k failed\n");
    return 1;
  }
  std::printf("%d %.6f %.6f\n", frames, cold, warm);
  std::fflush(stdout);
  std::_Exit(0);
}
