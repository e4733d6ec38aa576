// Turns a snapshot into a toolhost_debug_target_t session (debug_target.h): memory, registers,
// threads and modules from the snapshot; run control, breakpoints and register writes refused
// with the snapshot's one-sentence reason.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include <absl/status/statusor.h>

#include <toolhost/debug_target.h>

#include "snapshot.hpp"

namespace toolhost::dump_backend {

// Returns a session that owns `snap`; its `close` frees both.
toolhost_debug_target_t* make_target(std::unique_ptr<snapshot> snap);

// The body of a snapshot backend's `open`: runs `open_snapshot` and wraps what it returns, or
// writes why it failed to `error` and returns null. An exception becomes "<what> could not be
// opened: ...". Never throws.
toolhost_debug_target_t* open_target(toolhost_writer_t* error, std::string_view what,
                                     const std::function<absl::StatusOr<std::unique_ptr<snapshot>>()>& open_snapshot) noexcept;

// The snapshot behind a session made by make_target (for tests), or nullptr.
snapshot* snapshot_of(toolhost_debug_target_t* t);

}  // namespace toolhost::dump_backend
