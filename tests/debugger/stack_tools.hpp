// Test helper: the debugger's tools with the gdb backend (live gdbserver targets) and the dump
// backend (ELF cores), as the stack, variable and type tests drive them.
#pragma once

#include <memory>
#include <string>

#include "dump_factory.hpp"
#include "target_adapter.hpp"
#include "tools.hpp"

namespace toolhost::testing {

inline std::unique_ptr<toolhost::debugger::debugger_tools> make_stack_tools() {
  return std::make_unique<toolhost::debugger::debugger_tools>(
      [](const std::string& name) -> const toolhost_debug_target_factory_t* {
        if (name == "gdb") return toolhost::gdb::factory();
        return name == "dump" ? &toolhost::dump_backend::factory() : nullptr;
      },
      toolhost::debugger::launch_settings{});
}

}  // namespace toolhost::testing
