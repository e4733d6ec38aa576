#include "dump_factory.hpp"

#include <toolhost/sdk/debug_target.hpp>
#include <toolhost/snapshot/session.hpp>

#include "open_dump.hpp"

namespace toolhost::dump_backend {
namespace {

absl::StatusOr<std::unique_ptr<sdk::debug_target>> open(const sdk::open_request& request) {
  if (request.connect.empty())
    return absl::InvalidArgumentError("The dump backend needs the dump file's path as `connect`.");
  auto snap = open_dump(request.connect);
  if (!snap.ok()) return snap.status();
  return snapshots::make_session(std::move(*snap));
}

constexpr toolhost_debug_target_factory_t kFactory = sdk::debug_target_factory<&open>({
    "dump",
    "Crash dumps: Linux ELF cores (gcore), QEMU dump-guest-memory ELF files, 64-bit Windows kernel dumps",
    nullptr,
    "the path of the dump file (ELF core or PAGEDU64 .dmp)",
});

}  // namespace

const toolhost_debug_target_factory_t& factory() { return kFactory; }

}  // namespace toolhost::dump_backend
