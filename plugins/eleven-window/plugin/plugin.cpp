// The eleven-window plugin: the `eleven` server's tools, each one call over the window bridge.
#include <memory>
#include <string>

#include <toolhost/eleven/values.hpp>
#include <toolhost/sdk/sdk.hpp>

#include "bridge_client.hpp"
#include "tools.hpp"

namespace {

namespace sdk = toolhost::sdk;
namespace eleven = toolhost::eleven;

// The plugin's settings: the host checks them against this schema (with where each was written)
// before init reads them; integer_setting checks the same ranges on a host that does not.
struct integer_setting_spec {
  const char* name;
  int64_t fallback, low, high;
  const char* description;
};
constexpr integer_setting_spec kTimeout{"timeout_ms", 10000, 100, 600000,
                                        "The longest one call waits for the window, in milliseconds"};
constexpr integer_setting_spec kMaxReply{"max_reply_bytes", 16 << 20, 1024, 256 << 20,
                                         "The largest answer the window may send, in bytes"};

std::string settings_schema() {
  std::string properties;
  for (const integer_setting_spec* s : {&kTimeout, &kMaxReply}) {
    if (!properties.empty()) properties += ",";
    properties += sdk::quote(s->name) + R"(:{"type":"integer","minimum":)" + std::to_string(s->low) + R"(,"maximum":)" +
                  std::to_string(s->high) + R"(,"description":)" + sdk::quote(s->description) + "}";
  }
  return R"({"type":"object","properties":{)" + properties + "}}";
}

// Reads an integer setting within its range; the error names the setting and the range.
absl::StatusOr<int64_t> integer_setting(const rapidjson::Value& settings, const integer_setting_spec& spec) {
  const rapidjson::Value* v = sdk::member(settings, spec.name);
  if (v == nullptr) return spec.fallback;
  if (!v->IsInt64() || v->GetInt64() < spec.low || v->GetInt64() > spec.high) {
    return absl::InvalidArgumentError(std::string("settings.eleven-window.") + spec.name + " must be an integer from " +
                                      std::to_string(spec.low) + " to " + std::to_string(spec.high));
  }
  return v->GetInt64();
}

sdk::result run(eleven::bridge_client& bridge, const eleven::tool_spec& spec, const sdk::args& args, sdk::call& call) {
  if (absl::Status s = spec.check(args.json()); !s.ok()) return sdk::result::error(std::string(s.message()));
  auto reply = bridge.call(spec.name, sdk::to_json(args.json()), [&call] { return call.cancelled(); });
  if (!reply.ok()) return sdk::result::error(std::string(reply.status().message()));
  if (!reply->ok) return sdk::result::error(reply->text);
  if (spec.output_schema.empty()) return sdk::result::text(reply->text);
  // current_view: the window answers with the JSON object itself.
  auto doc = sdk::parse_json(reply->text);
  if (!doc || !doc->IsObject()) {
    return sdk::result::error("The Eleven window answered " + std::string(spec.name) +
                              " with something that is not a JSON object.");
  }
  return sdk::result::structured(sdk::to_json(*doc)).add_text(reply->text);
}

absl::Status init(sdk::plugin& plugin) {
  if (auto s = plugin.declare_settings(settings_schema()); !s.ok()) return s;
  eleven::bridge_options options = eleven::bridge_options_from_environment();
  auto timeout = integer_setting(plugin.settings(), kTimeout);
  if (!timeout.ok()) return timeout.status();
  auto max_reply = integer_setting(plugin.settings(), kMaxReply);
  if (!max_reply.ok()) return max_reply.status();
  options.timeout = std::chrono::milliseconds(*timeout);
  options.max_reply_bytes = static_cast<size_t>(*max_reply);
  if (options.socket_path.empty()) {
    plugin.log(sdk::log_level::debug, "ELEVEN_BRIDGE is not set: every eleven tool will say no window is configured");
  }

  auto bridge = std::make_shared<eleven::bridge_client>(std::move(options));
  for (const auto& row : eleven::permission_rows()) {
    if (auto s = plugin.permission_kind(std::string(row.id), std::string(row.label), row.default_value); !s.ok()) {
      return s;
    }
  }
  for (const auto& spec : eleven::tool_specs()) {
    auto builder = plugin.tool(std::string(spec.name));
    builder.title(std::string(spec.title))
        .description(std::string(spec.description))
        .input_schema(std::string(spec.input_schema))
        .permission(std::string(spec.permission))
        .annotations(spec.read_only ? R"({"readOnlyHint":true,"openWorldHint":false})"
                                    : R"({"readOnlyHint":false,"destructiveHint":false,"openWorldHint":false})");
    if (!spec.output_schema.empty()) builder.output_schema(std::string(spec.output_schema));
    builder.concurrent((spec.flags & TOOLHOST_TOOL_CONCURRENT) != 0)
        .suggestion((spec.flags & TOOLHOST_TOOL_SUGGESTION) != 0)
        .reviewable((spec.flags & TOOLHOST_TOOL_REVIEWABLE) != 0);
    const eleven::tool_spec* s = &spec;
    if (auto st = builder.handler([bridge, s](const sdk::args& a, sdk::call& c) { return run(*bridge, *s, a, c); });
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace

TOOLHOST_PLUGIN("eleven-window", "1.0.0",
                "The eleven server: drive the Eleven window and annotate its project over the window bridge", init)
