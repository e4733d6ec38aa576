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

proxy& self(void* user_data) { return *static_cast<proxy*>(user_data); }

void write_text(toolhost_writer_t* out, const std::string& text) { sdk::write(out, text); }

// `toolhost plugins` starts every plugin once under a made-up server name in parentheses,
// with no settings, only to show what it registers. There is no upstream to run then.
bool listing_only(const std::string& server_name) { return !server_name.empty() && server_name.front() == '('; }

absl::Status init(sdk::plugin& plugin) {
  if (listing_only(plugin.server_name())) {
    return plugin.permission_kind(toolhost::rea_filter::kReadKind, toolhost::rea_filter::kReadLabel,
                                  TOOLHOST_PERMISSION_ALLOW);
  }
  const auto* notify = static_cast<const toolhost_notify_t*>(plugin.host()->get_service(plugin.host(), TOOLHOST_NOTIFY_ID));
  const char* ida_env = std::getenv(toolhost::rea_filter::kIdaConfigVariable);
  auto settings = toolhost::rea_filter::parse_settings(
      plugin.settings(), {plugin.server_name(), plugin.config_dir(), ida_env != nullptr ? ida_env : ""});
  if (!settings.ok()) {
    return absl::InvalidArgumentError("rea-filter for server " + plugin.server_name() + ": " +
                                      std::string(settings.status().message()));
  }
  if (auto s = plugin.permission_kind(toolhost::rea_filter::kReadKind, toolhost::rea_filter::kReadLabel,
                                      TOOLHOST_PERMISSION_ALLOW);
      !s.ok()) {
    return s;
  }

  const toolhost_host_t* host = plugin.host();
  toolhost::rea_filter::host_hooks hooks;
  hooks.list_changed = [notify, host](uint32_t lists) {
    if (notify != nullptr) notify->list_changed(host, lists);
  };
  hooks.resource_updated = [notify, host](const std::string& uri) {
    if (notify != nullptr) notify->resource_updated(host, uri.c_str());
  };
  hooks.client_log = [notify, host](toolhost_log_level_t level, const char* logger, const std::string& data) {
    if (notify != nullptr) notify->log(host, level, logger, data.c_str());
  };
  hooks.host_log = [&plugin](toolhost_log_level_t level, const std::string& message) {
    plugin.log(static_cast<sdk::log_level>(level), message);
  };
  auto state = std::make_shared<proxy>(std::move(*settings), std::move(hooks));
  proxy& p = plugin.keep(state);
  // Stop the upstream before anything else of this instance goes away.
  plugin.on_deinit([&p] { p.shutdown(); });

  toolhost_provider_desc_t desc{};
  desc.struct_size = sizeof(desc);
  desc.user_data = &p;
  desc.list_tools = [](void* ud, toolhost_writer_t* out) {
    try {
      write_text(out, self(ud).list_tools());
    } catch (...) {
      write_text(out, "[]");
    }
  };
  desc.call_tool = [](void* ud, const toolhost_call_t* call, const char* name, const char* args, size_t size,
                      toolhost_writer_t* out) -> bool {
    try {
      std::string result;
      if (!self(ud).call_tool(call, name, std::string_view(args != nullptr ? args : "{}", args != nullptr ? size : 2), &result)) {
        return false;
      }
      write_text(out, result);
      return true;
    } catch (const std::exception& e) {
      write_text(out, sdk::result::error(std::string(name) + " failed: " + e.what()).to_json());
      return true;
    } catch (...) {
      write_text(out, sdk::result::error(std::string(name) + " failed with an unknown exception.").to_json());
      return true;
    }
  };
  desc.list_resources = [](void* ud, toolhost_writer_t* out) {
    try {
      write_text(out, self(ud).list_resources());
    } catch (...) {
      write_text(out, "[]");
    }
  };
  desc.list_resource_templates = [](void* ud, toolhost_writer_t* out) {
    try {
      write_text(out, self(ud).list_resource_templates());
    } catch (...) {
      write_text(out, "[]");
    }
  };
  desc.read_resource = [](void* ud, const toolhost_call_t* call, const char* uri, toolhost_writer_t* out) -> toolhost_status_t {
    try {
      std::string result;
      const toolhost_status_t s = self(ud).read_resource(call, uri, &result);
      write_text(out, result);
      return s;
    } catch (...) {
      return TOOLHOST_ERR_INTERNAL;
    }
  };
  desc.list_prompts = [](void* ud, toolhost_writer_t* out) {
    try {
      write_text(out, self(ud).list_prompts());
    } catch (...) {
      write_text(out, "[]");
    }
  };
  desc.get_prompt = [](void* ud, const toolhost_call_t* call, const char* name, const char* args,
                       toolhost_writer_t* out) -> toolhost_status_t {
    try {
      std::string result;
      const toolhost_status_t s = self(ud).get_prompt(call, name, args != nullptr ? args : "{}", &result);
      write_text(out, result);
      return s;
    } catch (...) {
      return TOOLHOST_ERR_INTERNAL;
    }
  };
  desc.complete = [](void* ud, const char* ref, const char* argument, const char* value, const char* context,
                     toolhost_writer_t* out) -> bool {
    try {
      std::string result;
      if (!self(ud).complete(ref, argument, value, context != nullptr ? context : "{}", &result)) return false;
      write_text(out, result);
      return true;
    } catch (...) {
      return false;
    }
  };
  desc.instructions = [](void* ud, toolhost_writer_t* out) {
    try {
      write_text(out, self(ud).instructions());
    } catch (...) {
    }
  };
  if (auto s = plugin.provider(desc); !s.ok()) return s;

  // init must be quick, yet the upstream's instructions belong in the initialize reply and
  // REA may take seconds to start (npx, Hopper). So the upstream starts on a thread of its
  // own right away; list calls that come before it is ready wait for it.
  p.start_in_background();
  return absl::OkStatus();
}

}  // namespace

TOOLHOST_PLUGIN("rea-filter", "0.1.0",
                "Another MCP server re-exposed with a write filter: REA for eleven-rea, IDA's MCP plugin for ida, "
                "any server for custom",
                init)
