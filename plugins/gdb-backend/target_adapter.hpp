// The debug_target.h factory of the gdb backend: sessions over a gdb::session.
#pragma once

#include <toolhost/debug_target.h>

namespace toolhost::gdb {

// The factory this backend registers (name "gdb").
const toolhost_debug_target_factory_t* factory();

}  // namespace toolhost::gdb
