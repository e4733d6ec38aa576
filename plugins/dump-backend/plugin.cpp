// The dump-backend plugin: a debug-target transport named "dump" that opens ELF cores (gcore,
// QEMU dump-guest-memory) and 64-bit Windows crash dumps. `connect` is the file's path.
#include <toolhost/sdk/sdk.hpp>

#include "dump_factory.hpp"

namespace {

absl::Status init(toolhost::sdk::plugin& plugin) {
  if (auto s = plugin.declare_settings(toolhost::sdk::kNoSettings); !s.ok()) return s;
  return plugin.debug_target(toolhost::dump_backend::factory());
}

}  // namespace

TOOLHOST_PLUGIN("dump-backend", "1.0.0",
                "Debug-target backend for crash dumps (ELF cores, QEMU guest dumps, Windows kernel dumps)", init)
