// Commands a backend implements through debug_target.h `extension`: MSRs, reboot, bugcheck,
// version and link counters. Other backends answer that they do not offer them.
#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

// Every member of a flat JSON object as "name: value" lines.
std::string describe_object(const std::string& json) {
  auto doc = sdk::parse_json(json);
  if (!doc || !doc->IsObject()) return json + "\n";
  std::string out;
  for (const auto& m : doc->GetObject()) {
    out += std::string(m.name.GetString()) + ": " + (m.value.IsString() ? m.value.GetString() : sdk::to_json(m.value)) +
           "\n";
  }
  return out;
}

}  // namespace

absl::Status session::cmd_backend(const std::string& name, std::string_view args) {
  size_t pos = 0;
  if (name == "rdmsr" || name == "wrmsr") {
    skip_blanks(args, pos);
    if (pos >= args.size()) return usage_error(name, name + " needs the MSR number");
    auto msr = eval_prefix(args, pos);
    if (!msr.ok()) return usage_error(name, std::string(msr.status().message()));
    std::string json = R"({"msr":)" + sdk::quote(hex(*msr));
    if (name == "wrmsr") {
      if (pos >= args.size()) return usage_error(name, "wrmsr needs the value to write");
      auto value = eval_prefix(args, pos);
      if (!value.ok()) return usage_error(name, std::string(value.status().message()));
      json += R"(,"value":)" + sdk::quote(hex(*value));
    }
    if (pos < args.size()) return usage_error(name, "unexpected '" + std::string(args.substr(pos)) + "'");
    auto reply = target_->extension(name, json + "}");
    if (!reply.ok()) return reply.status();
    registers_.reset();
    if (name == "rdmsr") {
      auto doc = sdk::parse_json(*reply);
      const auto value = doc ? sdk::string_member(*doc, "value") : std::nullopt;
      out_ += "msr[" + hex(*msr).substr(2) +
              "] = " + (value ? address_text(std::strtoull(std::string(*value).c_str(), nullptr, 0)) : *reply) + "\n";
      result_json_ = *reply;
    }
    return absl::OkStatus();
  }
  if (!trim(args).empty()) return usage_error(name, name + " takes no arguments");
  if (name == ".reboot" || name == ".crash") {
    auto reply = target_->extension(name == ".reboot" ? "reboot" : "bugcheck", "{}");
    if (!reply.ok()) return reply.status();
    after_stop();
    out_ += name == ".reboot" ? "Rebooting the target.\n" : "Bugcheck 0xE2 requested.\n";
    auto stopped = wait_for_stop(deadline_);
    return stopped.ok() ? absl::OkStatus() : stopped.status();
  }
  std::string windows_json;
  if (name != ".kdstats" && windows_) {
    // What discovery found, WinDbg's two lines first.
    out_ += windows_version_text(windows_json);
  }
  auto reply = target_->extension(name == ".kdstats" ? "link_stats" : "version", "{}");
  if (!reply.ok()) {
    if (!windows_json.empty() && absl::IsUnimplemented(reply.status())) {
      result_json_ = windows_json;
      return absl::OkStatus();
    }
    return reply.status();
  }
  out_ += describe_object(*reply);
  result_json_ =
      windows_json.empty() ? *reply : windows_json.substr(0, windows_json.size() - 1) + R"(,"backend":)" + *reply + "}";
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
