// Turns a snapshot into a toolhost_debug_target_t session (debug_target.h): memory, registers,
// threads and modules from the snapshot; run control, breakpoints and register writes refused
// with the snapshot's one-sentence reason.
#pragma once

#include <memory>

#include <toolhost/debug_target.h>

#include "snapshot.hpp"

namespace toolhost::dump_backend {

// Returns a session that owns `snap`; its `close` frees both.
toolhost_debug_target_t* make_target(std::unique_ptr<snapshot> snap);

// The snapshot behind a session made by make_target (for tests), or nullptr.
snapshot* snapshot_of(toolhost_debug_target_t* t);

}  // namespace toolhost::dump_backend
