// kdnet-sim: the KDNET target simulator as a process, for integration tests that drive the
// debugger through toolhost. Options:
//   --host ADDR --port N --key a.b.c.d --drop P --corrupt P --seed N --poke-ms N --retransmit-ms N
//   --start running|initial-break|breakpoint
//   --kd-target unix:PATH  carry the KD packets of the KDCOM target listening at PATH (kd-sim
//                          --winguest DIR, or kd-sim --qemu-gdb SOCK for a live guest) instead
//                          of serving the built-in machine
// Reads commands on stdin, one per line: "reboot", "faults DROP CORRUPT", "inject same",
// "inject cpu N", "stats", "quit".
// "stats" prints one JSON line on stdout. Exits when stdin closes.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "kdnet_sim.hpp"

int main(int argc, char** argv) {
  kdnet_sim::options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--host")
      o.host = v;
    else if (flag == "--port")
      o.port = static_cast<uint16_t>(std::atoi(v));
    else if (flag == "--key")
      o.key = v;
    else if (flag == "--drop")
      o.drop = std::atof(v);
    else if (flag == "--corrupt")
      o.corrupt = std::atof(v);
    else if (flag == "--seed")
      o.seed = static_cast<uint32_t>(std::atoi(v));
    else if (flag == "--poke-ms")
      o.poke_interval_ms = static_cast<uint32_t>(std::atoi(v));
    else if (flag == "--retransmit-ms")
      o.retransmit_ms = static_cast<uint32_t>(std::atoi(v));
    else if (flag == "--kd-target")
      o.kd_target = v;
    else if (flag == "--start" && std::string(v) == "running")
      o.start = kdnet_sim::start_state::running;
    else if (flag == "--start" && std::string(v) == "initial-break")
      o.start = kdnet_sim::start_state::initial_break;
    else if (flag == "--start" && std::string(v) == "breakpoint")
      o.start = kdnet_sim::start_state::breakpoint;
    else {
      std::cerr << "kdnet-sim: unknown option " << flag << "\n";
      return 2;
    }
  }
  kdnet_sim::simulator sim(o);
  std::string error;
  if (!sim.start(&error)) {
    std::cerr << "kdnet-sim: " << error << "\n";
    return 1;
  }
  std::cerr << "kdnet-sim: poking " << o.host << ":" << o.port << "\n";
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "quit") break;
    if (cmd == "reboot") sim.reboot();
    if (cmd == "inject") {
      std::string what;
      int cpu = 0;
      in >> what >> cpu;
      sim.inject(what == "same", cpu);
    }
    if (cmd == "faults") {
      double drop = 0, corrupt = 0;
      in >> drop >> corrupt;
      sim.set_faults(drop, corrupt);
    }
    if (cmd == "stats") {
      const auto c = sim.stats();
      std::printf(
          "{\"keyed\":%s,\"halted\":%s,\"breakpoints\":%zu,\"rax\":%llu,\"rejected\":%llu,\"dropped\":%llu,"
          "\"corrupted\":%llu,\"repeated_sequences\":%llu,\"duplicate_requests\":%llu,\"handshakes\":%llu,"
          "\"boots\":%llu,\"breakpoint_hits\":%llu,\"dbgprints\":%llu,\"injected\":%llu,\"relayed_requests\":%llu,"
          "\"relayed_replies\":%llu,\"transport_restarts\":%llu,\"retransmits\":%llu}\n",
          sim.keyed() ? "true" : "false", sim.halted() ? "true" : "false", sim.breakpoints_in_table(),
          static_cast<unsigned long long>(sim.rax()), static_cast<unsigned long long>(c.rejected),
          static_cast<unsigned long long>(c.dropped), static_cast<unsigned long long>(c.corrupted),
          static_cast<unsigned long long>(c.repeated_sequences), static_cast<unsigned long long>(c.duplicate_requests),
          static_cast<unsigned long long>(c.handshakes), static_cast<unsigned long long>(c.boots),
          static_cast<unsigned long long>(c.breakpoint_hits), static_cast<unsigned long long>(c.dbgprints),
          static_cast<unsigned long long>(c.injected), static_cast<unsigned long long>(c.relayed_requests),
          static_cast<unsigned long long>(c.relayed_replies), static_cast<unsigned long long>(c.transport_restarts),
          static_cast<unsigned long long>(c.retransmits));
      std::fflush(stdout);
    }
  }
  sim.stop();
  return 0;
}
