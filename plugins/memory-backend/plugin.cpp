// The memory-backend plugin: a debug-target transport named "memory" over a running QEMU
// guest's RAM. `connect`: "pid=N,qmp=SOCKET,cr3=0x..." (each part optional; a bare number is
// the pid; without a pid the one qemu-system-* process is used).
#include <toolhost/sdk/sdk.hpp>
#include <toolhost/snapshot/session.hpp>

#include "memory_target.hpp"

namespace {

namespace sdk = toolhost::sdk;
namespace mb = toolhost::memory_backend;

absl::StatusOr<std::unique_ptr<sdk::debug_target>> open(const sdk::open_request& request) {
  absl::StatusOr<mb::memory_options> options = mb::parse_memory_options(request.connect, request.options_json);
  if (!options.ok()) return options.status();
  if (request.timeout.count() > 0) options->timeout_ms = static_cast<int>(request.timeout.count());
  auto snap = mb::open_memory(*options);
  if (!snap.ok()) return snap.status();
  return toolhost::snapshots::make_session(std::move(*snap));
}

constexpr toolhost_debug_target_factory_t kFactory = sdk::debug_target_factory<&open>({
    "memory",
    "A running QEMU VM's RAM, read from the host (process_vm_readv); no run control",
    "",
    "pid=N,qmp=SOCKET,cr3=0x... (all optional: the one running qemu-system-* process; its RAM layout from QMP "
    "`info mtree -f` on that socket or on QEMU's own -qmp unix: socket, qmp=none for RAM below 2 GiB from -m; "
    "virtual addresses when cr3 is given)",
});

absl::Status init(sdk::plugin& plugin) {
  if (auto s = plugin.declare_settings(toolhost::sdk::kNoSettings); !s.ok()) return s;
  return plugin.debug_target(kFactory);
}

}  // namespace

TOOLHOST_PLUGIN("memory-backend", "1.0.0", "Debug-target backend for a running QEMU VM's RAM", init)
