#include "kdcom_factory.h"

#include <algorithm>
#include <string>

#include <toolhost/kd/byte_stream.h>
#include <toolhost/kd/debug_target_adapter.h>
#include <toolhost/kd/kdcom_link.h>
#include <toolhost/kd/open_options.h>
#include <toolhost/kd/target.h>
#include <toolhost/sdk/debug_target.hpp>

namespace toolhost::kd_backend {
namespace {

namespace sdk = toolhost::sdk;
using std::chrono::milliseconds;

constexpr const char* kDefaultConnect = "/tmp/ntoseye-kd.sock";

absl::StatusOr<std::unique_ptr<sdk::debug_target>> open(const sdk::open_request& request) {
  kd::kdcom_options link_options;
  kd::target_options target_options;
  target_options.attach_timeout = std::max(request.timeout, milliseconds(1000));
  if (auto s = kd::read_open_options(request.options_json.c_str(), "kd", link_options, target_options); !s.ok())
    return s;
  auto stream = kd::byte_stream::open(request.connect, request.timeout);
  if (!stream.ok()) return stream.status();
  return kd::attach_session(std::make_unique<kd::kdcom_link>(std::move(*stream), link_options), target_options);
}

constexpr toolhost_debug_target_factory_t kFactory = sdk::debug_target_factory<&open>({
    "kd",
    "Windows kernel debugging over KDCOM (a serial port: QEMU's chardev socket, TCP or a device)",
    kDefaultConnect,
    "a Unix socket path (QEMU -chardev socket,path=...,server=on -serial chardev:ID; default "
    "/tmp/ntoseye-kd.sock), unix:PATH, tcp:HOST:PORT, or a serial device such as /dev/ttyS0",
});

}  // namespace

const toolhost_debug_target_factory_t& kdcom_factory() { return kFactory; }

}  // namespace toolhost::kd_backend
