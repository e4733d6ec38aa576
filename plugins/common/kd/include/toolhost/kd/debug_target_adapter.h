// Exposes a kd::target as a debug-target session (toolhost/sdk/debug_target.hpp), so KDCOM and
// KDNET backends differ only in how they build their link. Extension operations are listed in
// plugins/kd-backend/README.md.
#pragma once

#include <memory>

#include <absl/status/statusor.h>
#include <toolhost/sdk/debug_target.hpp>

#include "toolhost/kd/target.h"

namespace toolhost::kd {

// Takes ownership of `t`; destroying the session detaches from the target.
std::unique_ptr<sdk::debug_target> make_session(std::unique_ptr<target> t);

// Attaches a target over `link` and wraps it as above: the end of every KD backend's `open`.
absl::StatusOr<std::unique_ptr<sdk::debug_target>> attach_session(std::unique_ptr<link> link, target_options options);

}  // namespace toolhost::kd
