// rea-filter: another MCP server re-exposed through toolhost, with a write filter in front.
//
// Serves `eleven-rea` (REA with its writes hidden), `ida` (the server named by an IDA MCP
// JSON config) and any `custom` server. See README.md.
#include <cstdlib>
#include <memory>

#include <toolhost/sdk/sdk.hpp>

#include "permissions.hpp"
#include "proxy.hpp"
#include "settings.hpp"

namespace {

namespace sdk = toolhost::sdk;
using toolhost::rea_filter::proxy;

// The SDK's provider over the proxy, which speaks the C codes its tests check.
class upstream_provider final : public sdk::provider {
 public:
  explicit upstream_provider(std::shared_ptr<proxy> p) : p_(std::move(p)) {}

  std::string list_tools() override { return p_->list_tools(); }
  std::string list_resources() override { return p_->list_resources(); }
  std::string list_resource_templates() override { return p_->list_resource_templates(); }
  std::string list_prompts() override { return p_->list_prompts(); }
  std::string instructions() override { return p_->instructions(); }

  std::optional<std::string> call_tool(sdk::call& call, std::string_view name, std::string_view arguments) override {
    std::string result;
    if (!p_->call_tool(call.raw(), name, arguments, &result)) return std::nullopt;
    return result;
  }
  absl::StatusOr<std::string> read_resource(sdk::call& call, std::string_view uri) override {
    std::string result;
    const toolhost_status_t code = p_->read_resource(call.raw(), uri, &result);
    return answer(code, std::move(result));
  }
  absl::StatusOr<std::string> get_prompt(sdk::call& call, std::string_view name, std::string_view arguments) override {
    std::string result;
    const toolhost_status_t code = p_->get_prompt(call.raw(), name, arguments, &result);
    return answer(code, std::move(result));
  }
  std::optional<std::string> complete(std::string_view ref, std::string_view argument, std::string_view value,
                                      std::string_view context) override {
    std::string result;
    if (!p_->complete(ref, argument, value, context, &result)) return std::nullopt;
    return result;
  }

 private:
  // The proxy's answer, or on failure its text as the status's message.
  static absl::StatusOr<std::string> answer(toolhost_status_t code, std::string text) {
    if (code == TOOLHOST_OK) return text;
    return sdk::status_from(code, text, "the upstream failed");
  }

  std::shared_ptr<proxy> p_;
};

// check-config: the upstream starts and lists its tools once, here, and stops again. Package
// runners are told to stay offline, so that checking a config downloads nothing.
absl::Status check_upstream(sdk::plugin& plugin, toolhost::rea_filter::proxy_settings settings) {
  const bool runs_command = !settings.upstream.command.empty();
  if (runs_command) {
    settings.upstream.env.emplace("npm_config_offline", "true");  // npx, npm exec
    settings.upstream.env.emplace("UV_OFFLINE", "1");             // uvx
    settings.upstream.env.emplace("PIP_NO_INDEX", "1");
  }
  toolhost::rea_filter::host_hooks hooks;
  proxy p(std::move(settings), std::move(hooks));
  const absl::Status s = p.start_and_check();
  p.shutdown();
  if (s.ok()) return s;
  return absl::FailedPreconditionError(
      "rea-filter for server " + plugin.server_name() + ": " + std::string(s.message()) +
      (runs_command ? " (check-config runs it offline, so a package that npx or uvx would download counts as "
                      "missing: run the command once by hand to install it)"
                    : ""));
}

absl::Status init(sdk::plugin& plugin) {
  namespace rf = toolhost::rea_filter;
  if (auto s = plugin.declare_settings(rf::kSettingsSchema); !s.ok()) return s;
  // `toolhost plugins` lists every plugin without a server's settings: show the permission kind,
  // start no upstream.
  if (plugin.listing() && plugin.settings().ObjectEmpty()) {
    return plugin.permission_kind(rf::kReadKind, rf::kReadLabel, TOOLHOST_PERMISSION_ALLOW);
  }
  const char* ida_env = std::getenv(rf::kIdaConfigVariable);
  auto settings = rf::parse_settings(plugin.settings(),
                                     {plugin.server_name(), plugin.config_dir(), ida_env != nullptr ? ida_env : ""});
  if (!settings.ok()) {
    return absl::InvalidArgumentError("rea-filter for server " + plugin.server_name() + ": " +
                                      std::string(settings.status().message()));
  }
  if (auto s = plugin.permission_kind(rf::kReadKind, settings->read_label, TOOLHOST_PERMISSION_ALLOW); !s.ok()) {
    return s;
  }
  if (plugin.listing()) return absl::OkStatus();
  if (plugin.checking()) return check_upstream(plugin, *std::move(settings));

  const auto instructions_wait = settings->instructions_wait;
  rf::host_hooks hooks;
  hooks.list_changed = [&plugin](uint32_t lists) { plugin.notify_list_changed(lists); };
  hooks.resource_updated = [&plugin](const std::string& uri) { plugin.notify_resource_updated(uri); };
  hooks.client_log = [&plugin](toolhost_log_level_t level, const char* logger, const std::string& data) {
    plugin.notify_log(level, logger, data);
  };
  hooks.host_log = [&plugin](toolhost_log_level_t level, const std::string& message) {
    plugin.log(static_cast<sdk::log_level>(level), message);
  };
  hooks.instructions_known = [&plugin] { plugin.notify_list_changed(TOOLHOST_LIST_INSTRUCTIONS); };
  auto state = std::make_shared<proxy>(std::move(*settings), std::move(hooks));
  proxy& p = plugin.keep(state);
  // Stop the upstream before anything else of this instance goes away.
  plugin.on_deinit([&p] { p.shutdown(); });
  if (auto s = plugin.provider(std::make_shared<upstream_provider>(state), {instructions_wait}); !s.ok()) return s;

  // init must be quick, yet the upstream's instructions belong in the initialize reply and
  // REA may take seconds to start (npx, Hopper). So the upstream starts on a thread of its
  // own right away; the host lets a client's initialize wait up to instructions_wait_ms for it.
  p.start_in_background();
  return absl::OkStatus();
}

}  // namespace

TOOLHOST_PLUGIN("rea-filter", "0.1.0",
                "Another MCP server re-exposed with a write filter: REA for eleven-rea, IDA's MCP plugin for ida, "
                "any server for custom",
                init)
