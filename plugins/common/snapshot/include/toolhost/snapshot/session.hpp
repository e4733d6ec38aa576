// A snapshot as a debug-target session (toolhost/sdk/debug_target.hpp): memory, registers,
// threads and modules from the snapshot; run control, breakpoints and register writes refused
// with the snapshot's one-sentence reason.
#pragma once

#include <memory>

#include <toolhost/debug_target.h>
#include <toolhost/sdk/debug_target.hpp>

#include "toolhost/snapshot/snapshot.hpp"

namespace toolhost::snapshots {

// A session that owns `snap`, named "memory" in messages when the snapshot is live, else "dump".
std::unique_ptr<sdk::debug_target> make_session(std::unique_ptr<snapshot> snap);

// The same session handed to C; its `close` frees both (for tests and benchmarks).
toolhost_debug_target_t* make_target(std::unique_ptr<snapshot> snap);

// The snapshot behind a session made here, or nullptr (for tests).
snapshot* snapshot_of(toolhost_debug_target_t* t);

}  // namespace toolhost::snapshots
