// The memory-backend plugin: a debug-target transport named "memory" over a running QEMU
// guest's RAM. `connect`: "pid=N,qmp=SOCKET,cr3=0x..." (each part optional; a bare number is
// the pid; without a pid the one qemu-system-* process is used).
#include <string>

#include <toolhost/debug_target.h>
#include <toolhost/plugin.h>

#include "memory_target.hpp"
#include "target_adapter.hpp"
#include "transport_entry.hpp"

namespace {

namespace db = toolhost::dump_backend;
namespace mb = toolhost::memory_backend;

toolhost_debug_target_t* open(const toolhost_debug_target_factory_t*, const char* connect, const char*,
                              const char* options_json, uint32_t timeout_ms, toolhost_writer_t* error) noexcept {
  return db::open_target(error, "The VM's memory", [&]() -> absl::StatusOr<std::unique_ptr<db::snapshot>> {
    absl::StatusOr<mb::memory_options> options =
        mb::parse_memory_options(connect != nullptr ? connect : "", options_json != nullptr ? options_json : "");
    if (!options.ok()) return options.status();
    if (timeout_ms > 0) options->timeout_ms = static_cast<int>(timeout_ms);
    return mb::open_memory(*options);
  });
}

const toolhost_debug_target_factory_t kFactory = {
    sizeof(toolhost_debug_target_factory_t),
    TOOLHOST_DEBUG_TARGET_VERSION,
    "memory",
    "A running QEMU VM's RAM, read from the host (process_vm_readv); no run control",
    "",
    "pid=N,qmp=SOCKET,cr3=0x... (all optional: the one running qemu-system-* process; its RAM layout from QMP "
    "`info mtree -f` on that socket or on QEMU's own -qmp unix: socket, qmp=none for RAM below 2 GiB from -m; "
    "virtual addresses when cr3 is given)",
    open,
};

bool init(const toolhost_host_t* host, void** instance, toolhost_writer_t* error) noexcept {
  *instance = nullptr;
  return db::register_debug_target(host, &kFactory, error);
}

}  // namespace

extern "C" TOOLHOST_EXPORT const toolhost_plugin_entry_t toolhost_plugin_entry;
const toolhost_plugin_entry_t toolhost_plugin_entry = {
    TOOLHOST_ABI_MAJOR, TOOLHOST_ABI_MINOR, sizeof(toolhost_plugin_entry_t), "memory-backend", "1.0.0",
    "Debug-target backend for a running QEMU VM's RAM", init, nullptr};
