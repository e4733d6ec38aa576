// The dump-backend plugin: a debug-target transport named "dump" that opens ELF cores (gcore,
// QEMU dump-guest-memory) and 64-bit Windows crash dumps. `connect` is the file's path.
#include <string>

#include <toolhost/debug_target.h>
#include <toolhost/plugin.h>

#include "open_dump.hpp"
#include "target_adapter.hpp"
#include "transport_entry.hpp"

namespace {

namespace db = toolhost::dump_backend;

void say(toolhost_writer_t* error, const std::string& text) { db::write_text(error, text.data(), text.size()); }

toolhost_debug_target_t* open(const toolhost_debug_target_factory_t*, const char* connect, const char*, const char*,
                              uint32_t, toolhost_writer_t* error) noexcept {
  if (connect == nullptr || *connect == '\0') {
    say(error, "The dump backend needs the dump file's path as `connect`.");
    return nullptr;
  }
  return db::open_target(error, "The dump", [connect] { return db::open_dump(connect); });
}

const toolhost_debug_target_factory_t kFactory = {
    sizeof(toolhost_debug_target_factory_t),
    TOOLHOST_DEBUG_TARGET_VERSION,
    "dump",
    "Crash dumps: Linux ELF cores (gcore), QEMU dump-guest-memory ELF files, 64-bit Windows kernel dumps",
    nullptr,
    "the path of the dump file (ELF core or PAGEDU64 .dmp)",
    open,
};

bool init(const toolhost_host_t* host, void** instance, toolhost_writer_t* error) noexcept {
  *instance = nullptr;
  return db::register_debug_target(host, &kFactory, error);
}

}  // namespace

extern "C" TOOLHOST_EXPORT const toolhost_plugin_entry_t toolhost_plugin_entry;
const toolhost_plugin_entry_t toolhost_plugin_entry = {
    TOOLHOST_ABI_MAJOR, TOOLHOST_ABI_MINOR, sizeof(toolhost_plugin_entry_t), "dump-backend", "1.0.0",
    "Debug-target backend for crash dumps (ELF cores, QEMU guest dumps, Windows kernel dumps)", init, nullptr};
