// Test helper: the debugger's tools with the gdb backend (live gdbserver targets) and the dump
// backend (ELF cores), as the stack, variable and type tests drive them.
#pragma once

#include <memory>
#include <string>

#include "open_dump.hpp"
#include "target_adapter.hpp"
#include "tools.hpp"
// The gdb backend's adapter header has the same name.
#include "../../plugins/dump-backend/target_adapter.hpp"

namespace toolhost::testing {

inline const toolhost_debug_target_factory_t kDumpFactory = {
    sizeof(toolhost_debug_target_factory_t), TOOLHOST_DEBUG_TARGET_VERSION, "dump", "ELF cores", nullptr, "a path",
    [](const toolhost_debug_target_factory_t*, const char* connect, const char*, const char*, uint32_t,
       toolhost_writer_t* error) noexcept -> toolhost_debug_target_t* {
      const std::string path = connect;
      return toolhost::dump_backend::open_target(error, "The dump", [path] { return toolhost::dump_backend::open_dump(path); });
    }};

inline std::unique_ptr<toolhost::debugger::debugger_tools> make_stack_tools() {
  return std::make_unique<toolhost::debugger::debugger_tools>(
      [](const std::string& name) -> const toolhost_debug_target_factory_t* {
        if (name == "gdb") return toolhost::gdb::factory();
        return name == "dump" ? &kDumpFactory : nullptr;
      },
      toolhost::debugger::launch_settings{});
}

}  // namespace toolhost::testing
