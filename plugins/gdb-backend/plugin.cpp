// The gdb-backend plugin: registers the "gdb" debug-target transport for the debugger plugin.
#include <toolhost/sdk/sdk.hpp>

#include "target_adapter.hpp"

namespace {

absl::Status init(toolhost::sdk::plugin& plugin) {
  if (auto s = plugin.declare_settings(toolhost::sdk::kNoSettings); !s.ok()) return s;
  return plugin.debug_target(*toolhost::gdb::factory());
}

}  // namespace

TOOLHOST_PLUGIN("gdb-backend", "1.0.0", "Debug targets over the GDB remote protocol (gdbserver, QEMU)", init)
