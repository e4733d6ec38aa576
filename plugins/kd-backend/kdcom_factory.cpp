#include "kdcom_factory.h"

#include <algorithm>
#include <string>

#include <toolhost/kd/byte_stream.h>
#include <toolhost/kd/debug_target_adapter.h>
#include <toolhost/kd/kdcom_link.h>
#include <toolhost/kd/target.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::kd_backend {
namespace {

namespace sdk = toolhost::sdk;
using std::chrono::milliseconds;

constexpr const char* kDefaultConnect = "/tmp/ntoseye-kd.sock";

// Reads an optional non-negative integer option; false (with a message) when it is malformed.
bool option(const rapidjson::Value& options, const char* name, int64_t low, int64_t high, int64_t& into,
            std::string& error) {
  const rapidjson::Value* v = sdk::member(options, name);
  if (v == nullptr) return true;
  if (!v->IsInt64() || v->GetInt64() < low || v->GetInt64() > high) {
    error = std::string("The option \"") + name + "\" must be an integer from " + std::to_string(low) + " to " +
            std::to_string(high) + ".";
    return false;
  }
  into = v->GetInt64();
  return true;
}

toolhost_debug_target_t* open(const toolhost_debug_target_factory_t*, const char* connect, const char*,
                              const char* options_json, uint32_t timeout_ms, toolhost_writer_t* error) {
  kd::kdcom_options link_options;
  kd::target_options target_options;
  target_options.attach_timeout = milliseconds(std::max<uint32_t>(timeout_ms, 1000));
  if (options_json != nullptr && *options_json != '\0') {
    std::string problem;
    auto doc = sdk::parse_json(options_json, &problem);
    if (!doc || !doc->IsObject()) {
      sdk::write(error, "The kd options must be a JSON object" + (problem.empty() ? std::string(".") : ": " + problem));
      return nullptr;
    }
    int64_t ack = link_options.ack_timeout.count(), retries = link_options.retries;
    int64_t request = target_options.request_timeout.count(), attach_wait = target_options.attach_wait.count();
    if (!option(*doc, "ack_timeout_ms", 10, 10000, ack, problem) || !option(*doc, "retries", 0, 100, retries, problem) ||
        !option(*doc, "request_timeout_ms", 100, 60000, request, problem) ||
        !option(*doc, "attach_wait_ms", 0, 60000, attach_wait, problem)) {
      sdk::write(error, problem);
      return nullptr;
    }
    link_options.ack_timeout = milliseconds(ack);
    link_options.retries = static_cast<int>(retries);
    target_options.request_timeout = milliseconds(request);
    target_options.attach_wait = milliseconds(attach_wait);
  }
  auto stream = kd::byte_stream::open(connect, milliseconds(timeout_ms));
  if (!stream.ok()) {
    sdk::write(error, std::string(stream.status().message()));
    return nullptr;
  }
  auto link = std::make_unique<kd::kdcom_link>(std::move(*stream), link_options);
  auto t = kd::target::attach(std::move(link), target_options);
  if (!t.ok()) {
    sdk::write(error, std::string(t.status().message()));
    return nullptr;
  }
  return kd::make_debug_target(std::move(*t));
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
