// kd-sim: a KDCOM target simulator for testing KD debuggers without Windows. It listens on a
// Unix socket (as QEMU's serial chardev does) or TCP, serves an x86-64 machine through the KD
// manipulate APIs and injects faults on request. See README.md.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "kd_server.h"
#include "qemu_machine.h"
#include "sim_machine.h"
#include "winguest_image.h"

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: kd-sim [--listen unix:PATH|tcp:PORT|pty] [--control unix:PATH] [--cpus N]\n"
               "              [--start running|initial-break|breakpoint] [--halted]\n"
               "              [--drop P] [--corrupt P] [--delay P --delay-ms N] [--reorder P] [--seed N]\n"
               "              [--ack-timeout-ms N] [--no-break-in] [--reset-storm] [--verbose]\n"
               "              [--winguest SNAPSHOT_DIR | --qemu-gdb unix:PATH|PATH|tcp:HOST:PORT]\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  kdsim::options o;
  std::optional<kdsim::machine_image> image;
  std::string qemu_gdb;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kd-sim: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--listen")
      o.listen = value();
    else if (a == "--control")
      o.control = value();
    else if (a == "--cpus")
      o.cpus = std::max(1, std::atoi(value().c_str()));
    else if (a == "--halted")
      o.start = kdsim::start_state::initial_break;
    else if (a == "--start") {
      const std::string v = value();
      if (v == "running")
        o.start = kdsim::start_state::running;
      else if (v == "initial-break")
        o.start = kdsim::start_state::initial_break;
      else if (v == "breakpoint")
        o.start = kdsim::start_state::breakpoint;
      else {
        std::fprintf(stderr, "kd-sim: --start takes running, initial-break or breakpoint, not '%s'\n", v.c_str());
        return 2;
      }
    } else if (a == "--drop")
      o.wire.drop = std::atof(value().c_str());
    else if (a == "--corrupt")
      o.wire.corrupt = std::atof(value().c_str());
    else if (a == "--delay")
      o.wire.delay = std::atof(value().c_str());
    else if (a == "--delay-ms")
      o.wire.delay_ms = std::atoi(value().c_str());
    else if (a == "--reorder")
      o.wire.reorder = std::atof(value().c_str());
    else if (a == "--seed")
      o.seed = static_cast<uint32_t>(std::strtoul(value().c_str(), nullptr, 0));
    else if (a == "--ack-timeout-ms")
      o.ack_timeout_ms = std::atoi(value().c_str());
    else if (a == "--verbose")
      o.verbose = true;
    else if (a == "--no-break-in")
      o.no_break_in = true;
    else if (a == "--reset-storm")
      o.reset_storm = true;
    else if (a == "--winguest") {
      kdsim::machine_image loaded;
      if (const std::string error = kdsim::load_winguest_image(value(), loaded); !error.empty()) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 2;
      }
      image = std::move(loaded);
    } else if (a == "--qemu-gdb") {
      qemu_gdb = value();
    } else {
      usage();
      return 2;
    }
  }
  if (o.start == kdsim::start_state::breakpoint && (image || !qemu_gdb.empty())) {
    std::fprintf(stderr, "kd-sim: --start breakpoint is the built-in kernel's (a breakpoint on its DbgPrint caller)\n");
    return 2;
  }
  if (image && !qemu_gdb.empty()) {
    std::fprintf(stderr, "kd-sim: --winguest and --qemu-gdb each name the machine; give one\n");
    return 2;
  }
  std::unique_ptr<kdsim::machine> m;
  if (!qemu_gdb.empty()) {
    std::string error;
    m = kdsim::qemu_machine::connect(qemu_gdb, error);
    if (!m) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
  } else if (image) {
    m = std::make_unique<kdsim::sim_machine>(o.cpus, std::move(*image));
  } else {
    m = std::make_unique<kdsim::sim_machine>(o.cpus);
  }
  kdsim::kd_server server(o, std::move(m));
  return server.run();
}
