// The dump-backend plugin: a debug-target transport named "dump" that opens ELF cores (gcore,
// QEMU dump-guest-memory) and 64-bit Windows crash dumps. `connect` is the file's path.
#include <toolhost/sdk/sdk.hpp>
#include <toolhost/snapshot/session.hpp>

#include "open_dump.hpp"

namespace {

namespace sdk = toolhost::sdk;

absl::StatusOr<std::unique_ptr<sdk::debug_target>> open(const sdk::open_request& request) {
  if (request.connect.empty()) return absl::InvalidArgumentError("The dump backend needs the dump file's path as `connect`.");
  auto snap = toolhost::dump_backend::open_dump(request.connect);
  if (!snap.ok()) return snap.status();
  return toolhost::snapshots::make_session(std::move(*snap));
}

constexpr toolhost_debug_target_factory_t kFactory = sdk::debug_target_factory<&open>({
    "dump",
    "Crash dumps: Linux ELF cores (gcore), QEMU dump-guest-memory ELF files, 64-bit Windows kernel dumps",
    nullptr,
    "the path of the dump file (ELF core or PAGEDU64 .dmp)",
});

absl::Status init(sdk::plugin& plugin) { return plugin.debug_target(kFactory); }

}  // namespace

TOOLHOST_PLUGIN("dump-backend", "1.0.0",
                "Debug-target backend for crash dumps (ELF cores, QEMU guest dumps, Windows kernel dumps)", init)
