// The "kdnet" debug-target factory: KD over KDNET, listening for the target's poke on UDP.
#pragma once

#include <toolhost/debug_target.h>

namespace toolhost::kdnet_backend {

const toolhost_debug_target_factory_t& kdnet_factory();

}  // namespace toolhost::kdnet_backend
