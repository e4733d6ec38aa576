// The "dump" debug-target factory: `connect` is the path of an ELF core or a Windows crash dump.
#pragma once

#include <toolhost/debug_target.h>

namespace toolhost::dump_backend {

const toolhost_debug_target_factory_t& factory();

}  // namespace toolhost::dump_backend
