#include "kdnet_factory.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <toolhost/kd/debug_target_adapter.h>
#include <toolhost/kd/open_options.h>
#include <toolhost/kd/target.h>
#include <toolhost/kdnet/endpoint.hpp>
#include <toolhost/kdnet/kd_link.hpp>
#include <toolhost/kdnet/key.hpp>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::kdnet_backend {
namespace {

namespace sdk = toolhost::sdk;
using std::chrono::milliseconds;

toolhost_debug_target_t* open(const toolhost_debug_target_factory_t*, const char* connect, const char* key,
                              const char* options_json, uint32_t timeout_ms, toolhost_writer_t* error) {
  if (key == nullptr || *key == '\0') {
    sdk::write(error,
               "KDNET needs the target's key: pass key:\"a.b.c.d\", the four base-36 numbers that kdnet.exe printed "
               "or that bcdedit /dbgsettings net ... key:a.b.c.d set on the target.");
    return nullptr;
  }
  auto control = kdnet::parse_key(key);
  if (!control.ok()) {
    sdk::write(error, std::string(control.status().message()));
    return nullptr;
  }

  kdnet::kd_link_options link_options;
  kd::target_options target_options;
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(timeout_ms);
  if (auto s = kd::read_open_options(options_json, "kdnet", link_options, target_options); !s.ok()) {
    sdk::write(error, std::string(s.message()));
    return nullptr;
  }

  // The target initiates: listen, then wait for its poke and answer the handshake.
  auto wire = kdnet::endpoint::listen(connect, *control);
  if (!wire.ok()) {
    sdk::write(error, std::string(wire.status().message()));
    return nullptr;
  }
  if (auto s = (*wire)->wait_keyed(milliseconds(timeout_ms)); !s.ok()) {
    sdk::write(error, std::string(s.message()) + ".");
    return nullptr;
  }
  // Attaching gets what is left of the timeout, but at least a few break-in rounds.
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
  target_options.attach_timeout = std::max(left, milliseconds(3000));
  return kd::attach_debug_target(std::make_unique<kdnet::kd_link>(std::move(*wire), link_options), target_options, error);
}

}  // namespace

const toolhost_debug_target_factory_t& kdnet_factory() {
  static const toolhost_debug_target_factory_t factory = {
      sizeof(toolhost_debug_target_factory_t),
      TOOLHOST_DEBUG_TARGET_VERSION,
      "kdnet",
      "Windows kernel debugging over KDNET (encrypted UDP; the target connects to us)",
      "0.0.0.0:50000",
      "the HOST:PORT to listen on for the target's KDNET traffic (default 0.0.0.0:50000, the port given to "
      "kdnet.exe or bcdedit /dbgsettings net hostip:... port:...); also needs key:\"a.b.c.d\"",
      open,
  };
  return factory;
}

}  // namespace toolhost::kdnet_backend
