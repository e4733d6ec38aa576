// kd-backend: registers the "kd" debug-target transport (KDCOM). The debugger plugin finds it
// by name; everything protocol-level lives in plugins/common/kd.
#include <toolhost/debug_target.h>
#include <toolhost/sdk/sdk.hpp>

#include "kdcom_factory.h"

namespace {

absl::Status init(toolhost::sdk::plugin& plugin) {
  if (auto s = plugin.declare_settings(toolhost::sdk::kNoSettings); !s.ok()) return s;
  return plugin.debug_target(toolhost::kd_backend::kdcom_factory());
}

}  // namespace

TOOLHOST_PLUGIN("kd-backend", "1.0.0", "KD (KDCOM serial) debug-target backend for Windows kernels", init)
