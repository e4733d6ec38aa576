// The fixtures of the conformance suite's tasks scenarios (the io.modelcontextprotocol/tasks
// extension): tools that run long enough to become tasks, fail, ask while they run, or ask
// before they become one.
#pragma once

#include <toolhost/sdk/sdk.hpp>

namespace conformance {

absl::Status register_task_tools(toolhost::sdk::plugin& p, const char* permission_kind);

}  // namespace conformance
