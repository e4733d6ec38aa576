// KD requests and wall time of the debugger's Windows commands over kd, on kd-sim serving a
// snapshot of the Windows-shaped test guest: the kd target with its per-stop read cache, side by
// side with the same target reading every byte from the wire (options_json read_cache false).
//   toolhost_kd_windows_bench SNAPSHOT_DIR SYMBOL_DIR
// prints one line per (wire, cache, command): "wire|cache|command|requests|processes|ms".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <toolhost/sdk/json.hpp>

#include "kdcom_factory.h"
#include "sim_process.h"
#include "tools.hpp"

namespace {

// The kd factory with the cache switched off: the reference the cache must beat.
toolhost_debug_target_factory_t uncached;

toolhost_debug_target_t* open_uncached(const toolhost_debug_target_factory_t*, const char* connect, const char* key,
                                       const char*, uint32_t timeout_ms, toolhost_writer_t* error) {
  const auto& kd = toolhost::kd_backend::kdcom_factory();
  return kd.open(&kd, connect, key, R"({"read_cache":false})", timeout_ms, error);
}

uint64_t total_requests(kdtest::sim_process& sim) {
  const std::string counts = sim.control("requests");
  const size_t at = counts.find("total=");
  return at == std::string::npos ? 0 : std::strtoull(counts.c_str() + at + 6, nullptr, 10);
}

bool run(toolhost::debugger::debugger_tools& tools, kdtest::sim_process& sim, const char* wire, const char* cache,
         const std::string& line, size_t processes) {
  sim.control("requests reset");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = tools.command(line, 120000, "text", [] { return false; });
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (r.is_error()) {
    std::fprintf(stderr, "kd bench: '%s' failed: %s\n", line.c_str(), r.to_json().c_str());
    return false;
  }
  std::printf("%s|%s|%s|%llu|%zu|%.1f\n", wire, cache, line.c_str(),
              static_cast<unsigned long long>(total_requests(sim)), processes, ms);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: toolhost_kd_windows_bench SNAPSHOT_DIR SYMBOL_DIR\n");
    return 2;
  }
  uncached = toolhost::kd_backend::kdcom_factory();
  uncached.open = open_uncached;
  const std::string snapshot = argv[1];
  toolhost::debugger::launch_settings launch;
  launch.symbol_path = argv[2];
  const size_t processes = 4;  // the guest's System, smss.exe, csrss.exe, winlogon.exe
  for (const bool lossy : {false, true}) {
    for (const bool cached : {false, true}) {
      std::vector<std::string> args = {"--winguest", snapshot};
      if (lossy) args.insert(args.end(), {"--drop", "0.10", "--corrupt", "0.05", "--seed", "19"});
      kdtest::sim_process sim(args);
      const toolhost_debug_target_factory_t* factory = cached ? &toolhost::kd_backend::kdcom_factory() : &uncached;
      toolhost::debugger::debugger_tools tools(
          [factory](const std::string& name) { return name == "kd" ? factory : nullptr; }, launch);
      if (tools.open("kd", sim.socket_path(), "").is_error()) {
        std::fprintf(stderr, "kd bench: open failed\n");
        return 1;
      }
      const char* wire = lossy ? "lossy" : "clean";
      const char* cache = cached ? "cache" : "nocache";
      for (const char* line : {"!process 0 0", "!process 0 7", ".reload /f"}) {
        if (!run(tools, sim, wire, cache, line, processes)) return 1;
      }
      tools.close();
    }
  }
  return 0;
}
