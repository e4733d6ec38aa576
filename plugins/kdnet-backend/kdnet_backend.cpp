// kdnet-backend: registers the "kdnet" debug-target transport (KD over KDNET). The debugger
// plugin finds it by name; the KD protocol lives in plugins/common/kd, the KDNET wire in
// plugins/common/kdnet.
#include <toolhost/debug_target.h>
#include <toolhost/sdk/sdk.hpp>

#include "kdnet_factory.h"

namespace {

absl::Status init(toolhost::sdk::plugin& plugin) {
  if (auto s = plugin.declare_settings(toolhost::sdk::kNoSettings); !s.ok()) return s;
  return plugin.debug_target(toolhost::kdnet_backend::kdnet_factory());
}

}  // namespace

TOOLHOST_PLUGIN("kdnet-backend", "1.0.0", "KDNET (KD over encrypted UDP) debug-target backend for Windows kernels",
                init)
