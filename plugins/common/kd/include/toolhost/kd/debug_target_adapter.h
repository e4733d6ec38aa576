// Exposes a kd::target through the debug-target C interface (debug_target.h), so KDCOM and
// KDNET backends differ only in how they build their link. Extension operations are listed in
// plugins/kd-backend/README.md.
#pragma once

#include <memory>
#include <string>

#include <toolhost/debug_target.h>

#include "toolhost/kd/target.h"

namespace toolhost::kd {

// Takes ownership of `t`; the returned session frees itself in its `close`.
toolhost_debug_target_t* make_debug_target(std::unique_ptr<target> t);

// Attaches a target over `link` and wraps it as above; on failure writes why to `error` and
// returns null. The end of every KD backend's `open`.
toolhost_debug_target_t* attach_debug_target(std::unique_ptr<link> link, target_options options,
                                             toolhost_writer_t* error);

}  // namespace toolhost::kd
