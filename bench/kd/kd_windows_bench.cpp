// KD requests and wall time of the debugger's Windows commands over kd and kdnet, on kd-sim
// serving a snapshot of the Windows-shaped test guest (over KDNET behind kdnet-sim's relay): the kd
// target with its per-stop read cache, side by side with the same target reading every byte from
// the wire (options_json read_cache false).
//   toolhost_kd_windows_bench SNAPSHOT_DIR SYMBOL_DIR
// prints one line per (wire, cache, command): "wire|cache|command|requests|processes|ms", wire
// being clean (KDCOM), lossy (KDCOM, 10% loss, 5% corruption) or kdnet (KDNET, the same faults).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <toolhost/sdk/json.hpp>

#include "kdcom_factory.h"
#include "kdnet_factory.h"
#include "kdnet_sim.hpp"
#include "sim_process.h"
#include "tools.hpp"

namespace {

// The kd and kdnet factories with the cache switched off: the reference the cache must beat.
toolhost_debug_target_factory_t uncached_kd, uncached_kdnet;

toolhost_debug_target_t* open_uncached_kd(const toolhost_debug_target_factory_t*, const char* connect, const char* key,
                                          const char*, uint32_t timeout_ms, toolhost_writer_t* error) {
  const auto& kd = toolhost::kd_backend::kdcom_factory();
  return kd.open(&kd, connect, key, R"({"read_cache":false})", timeout_ms, error);
}

toolhost_debug_target_t* open_uncached_kdnet(const toolhost_debug_target_factory_t*, const char* connect,
                                             const char* key, const char*, uint32_t timeout_ms,
                                             toolhost_writer_t* error) {
  const auto& kdnet = toolhost::kdnet_backend::kdnet_factory();
  return kdnet.open(&kdnet, connect, key, R"({"read_cache":false})", timeout_ms, error);
}

// A loopback UDP port that was free a moment ago, for the kdnet backend to listen on.
uint16_t free_udp_port() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
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
  uncached_kd = toolhost::kd_backend::kdcom_factory();
  uncached_kd.open = open_uncached_kd;
  uncached_kdnet = toolhost::kdnet_backend::kdnet_factory();
  uncached_kdnet.open = open_uncached_kdnet;
  const std::string kdnet_key = "1.z.10.3w5e11264sgsf";
  const std::string snapshot = argv[1];
  toolhost::debugger::launch_settings launch;
  launch.symbol_path = argv[2];
  const size_t processes = 4;  // the guest's System, smss.exe, csrss.exe, winlogon.exe
  for (const char* wire : {"clean", "lossy", "kdnet"}) {
    const bool kdnet = std::string(wire) == "kdnet";
    for (const bool cached : {false, true}) {
      std::vector<std::string> args = {"--winguest", snapshot};
      if (std::string(wire) == "lossy")
        args.insert(args.end(), {"--drop", "0.10", "--corrupt", "0.05", "--seed", "19"});
      kdtest::sim_process sim(args);
      // kdnet: the same kd-sim, fault-free, behind kdnet-sim's relay, whose datagrams are lost
      // and corrupted instead.
      std::unique_ptr<kdnet_sim::simulator> relay;
      std::string connect = sim.socket_path(), key;
      if (kdnet) {
        kdnet_sim::options o;
        o.port = free_udp_port();
        o.key = kdnet_key;
        o.drop = 0.10;
        o.corrupt = 0.05;
        o.seed = 19;
        o.poke_interval_ms = 500;
        o.kd_target = "unix:" + sim.socket_path();
        connect = "127.0.0.1:" + std::to_string(o.port);
        key = kdnet_key;
        relay = std::make_unique<kdnet_sim::simulator>(o);
        std::string error;
        if (!relay->start(&error)) {
          std::fprintf(stderr, "kd bench: kdnet-sim: %s\n", error.c_str());
          return 1;
        }
      }
      const toolhost_debug_target_factory_t* factory =
          kdnet ? (cached ? &toolhost::kdnet_backend::kdnet_factory() : &uncached_kdnet)
                : (cached ? &toolhost::kd_backend::kdcom_factory() : &uncached_kd);
      const std::string backend = kdnet ? "kdnet" : "kd";
      toolhost::debugger::debugger_tools tools(
          [factory, backend](const std::string& name) { return name == backend ? factory : nullptr; }, launch);
      if (tools.open(backend, connect, key).is_error()) {
        std::fprintf(stderr, "kd bench: open over %s failed\n", wire);
        return 1;
      }
      const char* cache = cached ? "cache" : "nocache";
      for (const char* line : {"!process 0 0", "!process 0 7", ".reload /f"}) {
        if (!run(tools, sim, wire, cache, line, processes)) return 1;
      }
      tools.close();
    }
  }
  return 0;
}
