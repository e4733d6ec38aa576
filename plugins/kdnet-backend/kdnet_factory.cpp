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
#include <toolhost/sdk/debug_target.hpp>

namespace toolhost::kdnet_backend {
namespace {

namespace sdk = toolhost::sdk;
using std::chrono::milliseconds;

absl::StatusOr<std::unique_ptr<sdk::debug_target>> open(const sdk::open_request& request) {
  if (request.key.empty()) {
    return absl::InvalidArgumentError(
        "KDNET needs the target's key: pass key:\"a.b.c.d\", the four base-36 numbers that kdnet.exe printed "
        "or that bcdedit /dbgsettings net ... key:a.b.c.d set on the target.");
  }
  auto control = kdnet::parse_key(request.key);
  if (!control.ok()) return control.status();

  kdnet::kd_link_options link_options;
  kd::target_options target_options;
  const auto deadline = std::chrono::steady_clock::now() + request.timeout;
  if (auto s = kd::read_open_options(request.options_json.c_str(), "kdnet", link_options, target_options); !s.ok()) {
    return s;
  }

  // The target initiates: listen, then wait for its poke and answer the handshake.
  auto wire = kdnet::endpoint::listen(request.connect, *control);
  if (!wire.ok()) return wire.status();
  if (auto s = (*wire)->wait_keyed(request.timeout); !s.ok())
    return absl::Status(s.code(), std::string(s.message()) + ".");
  // Attaching gets what is left of the timeout, but at least a few break-in rounds.
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
  target_options.attach_timeout = std::max(left, milliseconds(3000));
  return kd::attach_session(std::make_unique<kdnet::kd_link>(std::move(*wire), link_options), target_options);
}

constexpr toolhost_debug_target_factory_t kFactory = sdk::debug_target_factory<&open>({
    "kdnet",
    "Windows kernel debugging over KDNET (encrypted UDP; the target connects to us)",
    "0.0.0.0:50000",
    "the HOST:PORT to listen on for the target's KDNET traffic (default 0.0.0.0:50000, the port given to "
    "kdnet.exe or bcdedit /dbgsettings net hostip:... port:...); also needs key:\"a.b.c.d\"",
});

}  // namespace

const toolhost_debug_target_factory_t& kdnet_factory() { return kFactory; }

}  // namespace toolhost::kdnet_backend
