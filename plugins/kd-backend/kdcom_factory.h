// The "kd" debug-target factory: KDCOM over a Unix socket, TCP or a serial device.
#pragma once

#include <toolhost/debug_target.h>

namespace toolhost::kd_backend {

const toolhost_debug_target_factory_t& kdcom_factory();

}  // namespace toolhost::kd_backend
