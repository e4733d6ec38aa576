#include <toolhost/kd/open_options.h>

#include <cstdint>
#include <string>

#include <toolhost/sdk/json.hpp>

namespace toolhost::kd {
namespace {

// Reads an optional integer option within [low, high] into `into`; false with a sentence when malformed.
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

}  // namespace

absl::Status read_open_options(const char* options_json, std::string_view backend, link_tuning& link,
                               target_options& target) {
  if (options_json == nullptr || *options_json == '\0') return absl::OkStatus();
  std::string problem;
  auto doc = sdk::parse_json(options_json, &problem);
  if (!doc || !doc->IsObject()) {
    return absl::InvalidArgumentError("The " + std::string(backend) + " options must be a JSON object" +
                                      (problem.empty() ? std::string(".") : ": " + problem));
  }
  int64_t ack = link.ack_timeout.count(), retries = link.retries;
  int64_t request = target.request_timeout.count(), attach_wait = target.attach_wait.count();
  if (!option(*doc, "ack_timeout_ms", 10, 10000, ack, problem) || !option(*doc, "retries", 0, 100, retries, problem) ||
      !option(*doc, "request_timeout_ms", 100, 60000, request, problem) ||
      !option(*doc, "attach_wait_ms", 0, 60000, attach_wait, problem)) {
    return absl::InvalidArgumentError(problem);
  }
  if (const rapidjson::Value* v = sdk::member(*doc, "read_cache")) {
    if (!v->IsBool()) return absl::InvalidArgumentError("The option \"read_cache\" must be true or false.");
    target.read_cache = v->GetBool();
  }
  link.ack_timeout = std::chrono::milliseconds(ack);
  link.retries = static_cast<int>(retries);
  target.request_timeout = std::chrono::milliseconds(request);
  target.attach_wait = std::chrono::milliseconds(attach_wait);
  return absl::OkStatus();
}

}  // namespace toolhost::kd
