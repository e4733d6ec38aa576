// The whole plugin side of a backend that only offers a debug-target transport, on the plain C
// ABI (plugin.h): look up the registry and register the factory. Kept off the C++ SDK's
// plugin.hpp, which needs nothing here.
#pragma once

#include <toolhost/debug_target.h>
#include <toolhost/plugin.h>

namespace toolhost::dump_backend {

// Registers `factory` as a TOOLHOST_DEBUG_TARGET_KIND transport; the `init` of the entry.
bool register_debug_target(const toolhost_host_t* host, const toolhost_debug_target_factory_t* factory,
                           toolhost_writer_t* error) noexcept;

// Appends `text` to a writer (a null writer swallows it).
void write_text(toolhost_writer_t* out, const char* text, size_t size) noexcept;

}  // namespace toolhost::dump_backend
