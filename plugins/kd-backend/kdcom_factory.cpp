#include "kdcom_factory.h"

#include <algorithm>
#include <string>

#include <toolhost/kd/byte_stream.h>
#include <toolhost/kd/debug_target_adapter.h>
#include <toolhost/kd/open_options.h>
#include <toolhost/kd/kdcom_link.h>
#include <toolhost/kd/target.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::kd_backend {
namespace {

namespace sdk = toolhost::sdk;
using std::chrono::milliseconds;

constexpr const char* kDefaultConnect = "/tmp/ntoseye-kd.sock";

toolhost_debug_target_t* open(const toolhost_debug_target_factory_t*, const char* connect, const char*,
                              const char* options_json, uint32_t timeout_ms, toolhost_writer_t* error) {
  kd::kdcom_options link_options;
  kd::target_options target_options;
  target_options.attach_timeout = milliseconds(std::max<uint32_t>(timeout_ms, 1000));
  if (auto s = kd::read_open_options(options_json, "kd", link_options, target_options); !s.ok()) {
    sdk::write(error, std::string(s.message()));
    return nullptr;
  }
  auto stream = kd::byte_stream::open(connect, milliseconds(timeout_ms));
  if (!stream.ok()) {
    sdk::write(error, std::string(stream.status().message()));
    return nullptr;
  }
  return kd::attach_debug_target(std::make_unique<kd::kdcom_link>(std::move(*stream), link_options), target_options, error);
}

}  // namespace

const toolhost_debug_target_factory_t& kdcom_factory() {
  static const toolhost_debug_target_factory_t factory = {
      sizeof(toolhost_debug_target_factory_t),
      TOOLHOST_DEBUG_TARGET_VERSION,
      "kd",
      "Windows kernel debugging over KDCOM (a serial port: QEMU's chardev socket, TCP or a device)",
      kDefaultConnect,
      "a Unix socket path (QEMU -chardev socket,path=...,server=on -serial chardev:ID; default "
      "/tmp/ntoseye-kd.sock), unix:PATH, tcp:HOST:PORT, or a serial device such as /dev/ttyS0",
      open,
  };
  return factory;
}

}  // namespace toolhost::kd_backend
