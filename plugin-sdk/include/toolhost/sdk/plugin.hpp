// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: declaring a plugin and registering what it offers.
//
//   absl::Status init(toolhost::sdk::plugin& p) {
//     p.permission_kind("greet", "Greet people", TOOLHOST_PERMISSION_ALLOW);
//     return p.tool("hello")
//         .description("Says hello.")
//         .input_schema(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})")
//         .permission("greet")
//         .handler([](const toolhost::sdk::args& a, toolhost::sdk::call&) {
//           return toolhost::sdk::result::text("Hello, " + a.string("name") + "!");
//         });
//   }
//   TOOLHOST_PLUGIN("hello", "1.0.0", "Says hello", init)
//
// Arguments arrive parsed and checked against the input schema; every callback is noexcept
// at the boundary and an exception becomes a tool error. Providers: sdk/provider.hpp; debugger
// backends: sdk/debug_target.hpp.
//
// Abseil. The SDK uses Abseil (absl::Status, StatusOr, StrCat, Span), and a plugin built with it
// takes Abseil from the toolhost executable that loads it: the executable links Debian 12's
// Abseil (20220623) statically and exports its symbols (cmake/ToolhostAbsl.cmake). So an SDK plugin
// - links no Abseil library of its own (toolhost_add_plugin links none and omits -z defs): a
//   second copy would carry globals of its own;
// - is compiled against the Abseil headers of the toolhost that loads it: Abseil keeps no ABI
//   from one release to the next, and a plugin built against another one fails to load with
//   "missing symbol", naming the Abseil symbol;
// - loads only into a host that provides Abseil so.
// No Abseil type crosses the ABI: plugin.h stays pure C.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/debug_target.h>
#include <toolhost/plugin.h>
#include <toolhost/sdk/call.hpp>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/provider.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/schema_check.hpp>
#include <toolhost/sdk/status.hpp>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::sdk {

// The arguments of one call, already checked against the schema.
class args {
 public:
  explicit args(const rapidjson::Value& value) noexcept : value_(value) {}

  const rapidjson::Value& json() const noexcept { return value_; }
  const rapidjson::Value* get(std::string_view name) const { return member(value_, name); }
  bool has(std::string_view name) const { return get(name) != nullptr; }

  std::string string(std::string_view name, std::string_view fallback = {}) const {
    const rapidjson::Value* v = get(name);
    return std::string(v != nullptr && v->IsString() ? as_view(*v) : fallback);
  }
  int64_t integer(std::string_view name, int64_t fallback = 0) const {
    const rapidjson::Value* v = get(name);
    if (v == nullptr || !v->IsNumber()) return fallback;
    return v->IsInt64() ? v->GetInt64() : static_cast<int64_t>(v->GetDouble());
  }
  double number(std::string_view name, double fallback = 0) const {
    const rapidjson::Value* v = get(name);
    return v != nullptr && v->IsNumber() ? v->GetDouble() : fallback;
  }
  bool boolean(std::string_view name, bool fallback = false) const {
    const rapidjson::Value* v = get(name);
    return v != nullptr && v->IsBool() ? v->GetBool() : fallback;
  }

 private:
  const rapidjson::Value& value_;
};

// The settings schema of a plugin that takes none: any key in its settings table is an error.
inline constexpr const char* kNoSettings = R"({"type":"object","properties":{}})";

using tool_handler = std::function<result(const args&, call&)>;
// Returns a ReadResourceResult as JSON text; NotFound for an unknown URI.
using resource_reader = std::function<absl::StatusOr<std::string>(std::string_view uri, call&)>;
// Returns a GetPromptResult as JSON text; InvalidArgument with a sentence for bad arguments.
using prompt_renderer = std::function<absl::StatusOr<std::string>(const args&, call&)>;
// Returns a completion object ({"values":[...]}) as JSON text.
using completer =
    std::function<std::string(std::string_view argument, std::string_view value, const rapidjson::Value& context)>;

// {"contents":[{"uri":..,"mimeType":..,"text":..}]}
inline std::string resource_text(std::string_view uri, std::string_view mime_type, std::string_view text) {
  return std::string(R"({"contents":[{"uri":)") + quote(uri) + R"(,"mimeType":)" + quote(mime_type) + R"(,"text":)" +
         quote(text) + "}]}";
}
// {"contents":[{"uri":..,"mimeType":..,"blob":base64}]}
inline std::string resource_blob(std::string_view uri, std::string_view mime_type, std::string_view base64) {
  return std::string(R"({"contents":[{"uri":)") + quote(uri) + R"(,"mimeType":)" + quote(mime_type) + R"(,"blob":)" +
         quote(base64) + "}]}";
}
// {"values":[...],"total":N,"hasMore":false}, at most 100 values as MCP allows.
inline std::string completion_values(const std::vector<std::string>& values) {
  std::string out = R"({"values":[)";
  for (size_t i = 0; i < values.size() && i < 100; ++i) {
    if (i != 0) out += ',';
    out += quote(values[i]);
  }
  out += R"(],"total":)" + std::to_string(values.size()) + R"(,"hasMore":)" + (values.size() > 100 ? "true" : "false") +
         "}";
  return out;
}

struct resource_options {
  std::string uri;  // fixed URI, or an RFC 6570 template when is_template
  bool is_template = false;
  std::string name;
  std::string title;
  std::string description;
  std::string mime_type;
  resource_reader read;
  completer complete;  // optional, for template variables
};

struct prompt_options {
  std::string name;
  std::string title;
  std::string description;
  std::string arguments_json;  // JSON array of PromptArgument, or empty
  prompt_renderer get;
  completer complete;  // optional
};

class plugin;

namespace detail {

struct tool_record {
  std::string name;
  rapidjson::Document schema;
  bool has_schema = false;
  tool_handler fn;
  // The host's log (stderr), so that a handler's exception is seen there too, not only by the
  // client; null when the host offers none.
  const toolhost_log_t* log = nullptr;
  const toolhost_host_t* host = nullptr;

  void log_failure(const std::string& what) const noexcept {
    if (log == nullptr) return;
    try {
      const std::string m = "tool " + name + " threw " + what;
      log->write(host, TOOLHOST_LOG_ERROR, m.c_str());
    } catch (...) {
    }
  }
};

struct resource_record {
  resource_reader read;
  completer complete;
};

struct prompt_record {
  std::string name;
  rapidjson::Document schema;  // built from the arguments' `required` flags
  prompt_renderer get;
  completer complete;
};

inline void run_tool(void* ud, const toolhost_call_t* raw, const char* json, size_t size,
                     toolhost_writer_t* out) noexcept {
  auto* rec = static_cast<tool_record*>(ud);
  try {
    scratch_memory<4096> values;
    scratch_memory<2048> stack;
    scratch_document doc(values.get(), 1024, stack.get());
    doc.Parse(json, size);
    if (doc.HasParseError() || !doc.IsObject()) {
      write(out, result::error("The arguments of " + rec->name + " must be a JSON object.").to_json());
      return;
    }
    if (rec->has_schema) {
      if (auto problem = check_arguments(rec->schema, doc)) {
        write(out, result::error("Invalid arguments for " + rec->name + ": " + *problem + ".").to_json());
        return;
      }
    }
    call context(raw);
    write(out, rec->fn(args(doc), context).to_json());
  } catch (const std::exception& e) {
    rec->log_failure(std::string("an exception: ") + e.what());
    write(out, result::error(rec->name + " failed: " + e.what()).to_json());
  } catch (...) {
    rec->log_failure("an exception that is not a std::exception");
    write(out, result::error(rec->name + " failed with an unknown exception.").to_json());
  }
}

inline toolhost_status_t read_resource(void* ud, const toolhost_call_t* raw, const char* uri,
                                       toolhost_writer_t* out) noexcept {
  return answer(out, [&] {
    call context(raw);
    return static_cast<resource_record*>(ud)->read(uri, context);
  });
}

inline void complete_with(const completer& fn, const char* argument, const char* value, const char* context_json,
                          toolhost_writer_t* out) noexcept {
  try {
    rapidjson::Document context;
    context.Parse(context_json);
    if (context.HasParseError()) context.SetObject();
    write(out, fn(argument, value, context));
  } catch (...) {
    write(out, completion_values({}));
  }
}

// The completion callback of a resource or prompt record.
template <class Record>
void complete_record(void* ud, const char* argument, const char* value, const char* context_json,
                     toolhost_writer_t* out) noexcept {
  complete_with(static_cast<Record*>(ud)->complete, argument, value, context_json, out);
}

// An optional string field of a descriptor: NULL when empty.
inline const char* or_null(const std::string& s) noexcept { return s.empty() ? nullptr : s.c_str(); }

// The fields every resource and prompt descriptor has, from its options.
template <class Desc, class Options>
void fill_names(Desc& d, const Options& o) {
  d.struct_size = sizeof d;
  d.name = o.name.c_str();
  d.title = or_null(o.title);
  d.description = or_null(o.description);
}

inline toolhost_status_t get_prompt(void* ud, const toolhost_call_t* raw, const char* json,
                                    toolhost_writer_t* out) noexcept {
  auto* rec = static_cast<prompt_record*>(ud);
  return answer(out, [&]() -> absl::StatusOr<std::string> {
    rapidjson::Document doc;
    doc.Parse(json);
    if (doc.HasParseError() || !doc.IsObject()) doc.SetObject();
    if (auto problem = check_arguments(rec->schema, doc)) {
      return absl::InvalidArgumentError("Invalid arguments for prompt " + rec->name + ": " + *problem + ".");
    }
    call context(raw);
    return rec->get(args(doc), context);
  });
}

}  // namespace detail

// Declares one tool; finish with handler(), which registers it.
class tool_builder {
 public:
  tool_builder(plugin& owner, std::string name) : owner_(owner), name_(std::move(name)) {}

  tool_builder& title(std::string v) {
    title_ = std::move(v);
    return *this;
  }
  tool_builder& description(std::string v) {
    description_ = std::move(v);
    return *this;
  }
  tool_builder& input_schema(std::string json) {
    input_schema_ = std::move(json);
    return *this;
  }
  tool_builder& output_schema(std::string json) {
    output_schema_ = std::move(json);
    return *this;
  }
  tool_builder& annotations(std::string json) {
    annotations_ = std::move(json);
    return *this;
  }
  tool_builder& permission(std::string kind) {
    permission_ = std::move(kind);
    return *this;
  }
  tool_builder& concurrent(bool yes = true) { return flag(TOOLHOST_TOOL_CONCURRENT, yes); }
  tool_builder& suggestion(bool yes = true) { return flag(TOOLHOST_TOOL_SUGGESTION, yes); }
  tool_builder& reviewable(bool yes = true) { return flag(TOOLHOST_TOOL_REVIEWABLE, yes); }
  // A long call: clients that support tasks may run it as one (`required`: only as one).
  tool_builder& tasks(bool required = false) {
    flag(TOOLHOST_TOOL_TASKS, true);
    return flag(TOOLHOST_TOOL_TASKS_REQUIRED, required);
  }

  absl::Status handler(tool_handler fn);

 private:
  tool_builder& flag(uint32_t bit, bool yes) {
    flags_ = yes ? (flags_ | bit) : (flags_ & ~bit);
    return *this;
  }

  plugin& owner_;
  std::string name_, title_, description_, input_schema_, output_schema_, annotations_, permission_;
  uint32_t flags_ = 0;
};

// What `init` receives: one plugin instance serving one server. Owns every handler it
// registered until the host calls deinit.
class plugin {
 public:
  explicit plugin(const toolhost_host_t* host) : host_(host) {
    registry_ = static_cast<const toolhost_registry_t*>(host->get_service(host, TOOLHOST_REGISTRY_ID));
    log_ = static_cast<const toolhost_log_t*>(host->get_service(host, TOOLHOST_LOG_ID));
    settings_service_ = static_cast<const toolhost_settings_t*>(host->get_service(host, TOOLHOST_SETTINGS_ID));
    notify_ = static_cast<const toolhost_notify_t*>(host->get_service(host, TOOLHOST_NOTIFY_ID));
    transports_ = static_cast<const toolhost_transports_t*>(host->get_service(host, TOOLHOST_TRANSPORTS_ID));
    settings_.SetObject();
    if (settings_service_ != nullptr) {
      string_writer out;
      settings_service_->get(host_, out.raw());
      settings_.Parse(out.text().c_str());
      if (settings_.HasParseError() || !settings_.IsObject()) settings_.SetObject();
    }
  }
  plugin(const plugin&) = delete;
  plugin& operator=(const plugin&) = delete;
  ~plugin() {
    for (auto it = deinit_hooks_.rbegin(); it != deinit_hooks_.rend(); ++it) (*it)();
  }

  const toolhost_host_t* host() const noexcept { return host_; }

  // True when this instance only lists what it registers (TOOLHOST_HOST_LISTING): register as
  // usual, start nothing.
  bool listing() const noexcept {
    return TOOLHOST_HAS_FIELD(host_, toolhost_host_t, flags) && (host_->flags & TOOLHOST_HOST_LISTING) != 0;
  }

  // True when this instance is only checked (TOOLHOST_HOST_CHECKING, check-config): prove the
  // settings work, download nothing, leave nothing running.
  bool checking() const noexcept {
    return TOOLHOST_HAS_FIELD(host_, toolhost_host_t, flags) && (host_->flags & TOOLHOST_HOST_CHECKING) != 0;
  }

  // Declares the settings this plugin takes as a JSON Schema object (plugin.h, declare_settings):
  // the host checks the config's table against it and refuses a misspelt key or a value out of
  // range with where it was written. Call it first in init and return what it returns. On a host
  // older than ABI 1.1 it checks nothing and returns OK.
  absl::Status declare_settings(std::string_view schema_json) {
    if (registry_ == nullptr || !TOOLHOST_HAS_FIELD(registry_, toolhost_registry_t, declare_settings)) {
      return absl::OkStatus();
    }
    const std::string schema(schema_json);
    return checked([&](toolhost_writer_t* e) { return registry_->declare_settings(host_, schema.c_str(), e); });
  }

  // This plugin's settings table from the config, as a JSON object.
  const rapidjson::Document& settings() const noexcept { return settings_; }
  std::string server_name() const { return settings_service_ != nullptr ? settings_service_->server_name(host_) : ""; }
  std::string config_dir() const { return settings_service_ != nullptr ? settings_service_->config_dir(host_) : "."; }

  // A line in the host's log (stderr).
  void log(log_level level, std::string_view message) const {
    if (log_ == nullptr) return;
    std::string m(message);
    log_->write(host_, static_cast<toolhost_log_level_t>(level), m.c_str());
  }

  absl::Status permission_kind(std::string id, std::string label, toolhost_permission_t default_value) {
    toolhost_permission_kind_desc_t d{sizeof(d), id.c_str(), label.c_str(), default_value};
    return checked([&](toolhost_writer_t* e) { return registry_->register_permission_kind(host_, &d, e); });
  }

  tool_builder tool(std::string name) { return tool_builder(*this, std::move(name)); }

  absl::Status resource(resource_options o) {
    auto rec = std::make_unique<detail::resource_record>();
    rec->read = std::move(o.read);
    rec->complete = std::move(o.complete);
    toolhost_resource_desc_t d{};
    detail::fill_names(d, o);
    d.uri = o.uri.c_str();
    d.is_template = o.is_template;
    d.mime_type = detail::or_null(o.mime_type);
    d.read = &detail::read_resource;
    d.complete = rec->complete ? &detail::complete_record<detail::resource_record> : nullptr;
    return add(&toolhost_registry_t::register_resource, d, std::move(rec), resources_);
  }

  absl::Status prompt(prompt_options o) {
    auto rec = std::make_unique<detail::prompt_record>();
    rec->name = o.name;
    rec->get = std::move(o.get);
    rec->complete = std::move(o.complete);
    // The prompt's required arguments become a schema, checked like a tool's.
    rec->schema.SetObject();
    auto& alloc = rec->schema.GetAllocator();
    rapidjson::Value required(rapidjson::kArrayType);
    if (!o.arguments_json.empty()) {
      rapidjson::Document list;
      list.Parse(o.arguments_json.c_str());
      if (list.HasParseError() || !list.IsArray()) {
        return absl::InvalidArgumentError("prompt " + o.name + ": arguments must be a JSON array");
      }
      for (const auto& a : list.GetArray()) {
        const auto* req = member(a, "required");
        const auto* nm = member(a, "name");
        if (req != nullptr && req->IsBool() && req->GetBool() && nm != nullptr && nm->IsString()) {
          required.PushBack(rapidjson::Value(nm->GetString(), alloc), alloc);
        }
      }
    }
    rec->schema.AddMember("required", required, alloc);
    toolhost_prompt_desc_t d{};
    detail::fill_names(d, o);
    d.arguments = detail::or_null(o.arguments_json);
    d.get = &detail::get_prompt;
    d.complete = rec->complete ? &detail::complete_record<detail::prompt_record> : nullptr;
    return add(&toolhost_registry_t::register_prompt, d, std::move(rec), prompts_);
  }

  // Tools, resources and prompts known only at run time (sdk/provider.hpp); kept until deinit.
  absl::Status provider(std::shared_ptr<sdk::provider> p, provider_options options = {}) {
    if (p == nullptr) return absl::InvalidArgumentError("no provider was given");
    const toolhost_provider_desc_t desc = detail::provider_desc(*p, options);
    absl::Status s = checked([&](toolhost_writer_t* e) { return registry_->register_provider(host_, &desc, e); });
    if (s.ok()) keep(std::move(p));
    return s;
  }

  absl::Status transport(std::string kind, std::string name, const void* factory) {
    toolhost_transport_desc_t d{sizeof(d), kind.c_str(), name.c_str(), factory};
    return checked([&](toolhost_writer_t* e) { return registry_->register_transport(host_, &d, e); });
  }

  // A debug-target backend (debug_target.h): registers `factory` under its name. `factory` must
  // outlive the plugin (a namespace-scope constant from sdk::debug_target_factory).
  absl::Status debug_target(const toolhost_debug_target_factory_t& factory) {
    return transport(TOOLHOST_DEBUG_TARGET_KIND, factory.name != nullptr ? factory.name : "", &factory);
  }

  absl::Status instructions(std::string_view text) {
    std::string t(text);
    return registry_->add_instructions(host_, t.c_str()) == TOOLHOST_OK
               ? absl::OkStatus()
               : absl::FailedPreconditionError("instructions can only be added during init");
  }

  // A transport another plugin of this server registered, or nullptr.
  const void* find_transport(std::string_view kind, std::string_view name) const {
    if (transports_ == nullptr) return nullptr;
    std::string k(kind), n(name);
    return transports_->find(host_, k.c_str(), n.c_str());
  }

  void notify_list_changed(uint32_t lists) const {
    if (notify_ != nullptr) notify_->list_changed(host_, lists);
  }
  void notify_resource_updated(std::string_view uri) const {
    if (notify_ == nullptr) return;
    std::string u(uri);
    notify_->resource_updated(host_, u.c_str());
  }
  // A notifications/message to every client of the server; `data_json` is any JSON value.
  void notify_log(toolhost_log_level_t level, const char* logger, std::string_view data_json) const {
    if (notify_ == nullptr) return;
    std::string d(data_json);
    notify_->log(host_, level, logger, d.c_str());
  }

  // Keeps `state` alive until deinit; returns a reference to it.
  template <class T>
  T& keep(std::shared_ptr<T> state) {
    T& ref = *state;
    kept_.push_back(std::move(state));
    return ref;
  }
  // Runs `fn` at deinit, before anything registered is destroyed (last added, first run).
  void on_deinit(std::function<void()> fn) { deinit_hooks_.push_back(std::move(fn)); }

 private:
  friend class tool_builder;

  // Registers `d`, whose user_data becomes `rec`, and keeps `rec` in `kept` when the host took it.
  template <class Desc, class Record>
  absl::Status add(toolhost_status_t (*toolhost_registry_t::*fn)(const toolhost_host_t*, const Desc*,
                                                                 toolhost_writer_t*),
                   Desc& d, std::unique_ptr<Record> rec, std::vector<std::unique_ptr<Record>>& kept) {
    d.user_data = rec.get();
    absl::Status s = checked([&](toolhost_writer_t* e) { return (registry_->*fn)(host_, &d, e); });
    if (s.ok()) kept.push_back(std::move(rec));
    return s;
  }

  template <class F>
  absl::Status checked(F&& fn) {
    if (registry_ == nullptr) return absl::FailedPreconditionError("the host offers no registry");
    string_writer error;
    const toolhost_status_t s = fn(error.raw());
    return status_from(s, error.text(), "registration refused");
  }

  const toolhost_host_t* host_;
  const toolhost_registry_t* registry_ = nullptr;
  const toolhost_log_t* log_ = nullptr;
  const toolhost_settings_t* settings_service_ = nullptr;
  const toolhost_notify_t* notify_ = nullptr;
  const toolhost_transports_t* transports_ = nullptr;
  rapidjson::Document settings_;
  std::vector<std::unique_ptr<detail::tool_record>> tools_;
  std::vector<std::unique_ptr<detail::resource_record>> resources_;
  std::vector<std::unique_ptr<detail::prompt_record>> prompts_;
  std::vector<std::shared_ptr<void>> kept_;
  std::vector<std::function<void()>> deinit_hooks_;
};

inline absl::Status tool_builder::handler(tool_handler fn) {
  auto rec = std::make_unique<detail::tool_record>();
  rec->name = name_;
  rec->fn = std::move(fn);
  rec->log = owner_.log_;
  rec->host = owner_.host_;
  if (!input_schema_.empty()) {
    rec->schema.Parse(input_schema_.c_str());
    if (rec->schema.HasParseError() || !rec->schema.IsObject()) {
      return absl::InvalidArgumentError("tool " + name_ + ": the input schema is not a JSON object");
    }
    rec->has_schema = true;
  }
  toolhost_tool_desc_t d{};
  d.struct_size = sizeof(d);
  d.name = name_.c_str();
  d.title = detail::or_null(title_);
  d.description = detail::or_null(description_);
  d.input_schema = detail::or_null(input_schema_);
  d.output_schema = detail::or_null(output_schema_);
  d.annotations = detail::or_null(annotations_);
  d.permission_kind = detail::or_null(permission_);
  d.flags = flags_;
  d.call = &detail::run_tool;
  return owner_.add(&toolhost_registry_t::register_tool, d, std::move(rec), owner_.tools_);
}

namespace detail {

template <absl::Status (*Init)(plugin&)>
bool init_trampoline(const toolhost_host_t* host, void** instance, toolhost_writer_t* error) noexcept {
  try {
    auto p = std::make_unique<plugin>(host);
    absl::Status s = Init(*p);
    if (!s.ok()) {
      write(error, std::string(s.message()));
      return false;
    }
    *instance = p.release();
    return true;
  } catch (const std::exception& e) {
    write(error, std::string("init threw an exception: ") + e.what());
  } catch (...) {
    write(error, "init threw an unknown exception");
  }
  return false;
}

inline void deinit_trampoline(void* instance) noexcept {
  try {
    delete static_cast<plugin*>(instance);
  } catch (...) {
  }
}

}  // namespace detail
}  // namespace toolhost::sdk

// The ABI minor an SDK plugin declares it needs (plugin.h, "Versions"): 0, because the SDK checks
// what the host offers before it uses a later addition. A plugin that calls such an addition
// itself defines this to that minor before it includes the SDK.
#ifndef TOOLHOST_PLUGIN_ABI_MINOR
#define TOOLHOST_PLUGIN_ABI_MINOR 0
#endif

// Emits the plugin's one exported symbol. INIT is `absl::Status INIT(toolhost::sdk::plugin&)`.
#define TOOLHOST_PLUGIN(ID, VERSION, DESCRIPTION, INIT)                                                    \
  extern "C" {                                                                                             \
  const toolhost_plugin_entry_t toolhost_plugin_entry = {TOOLHOST_ABI_MAJOR,                               \
                                                         TOOLHOST_PLUGIN_ABI_MINOR,                        \
                                                         sizeof(toolhost_plugin_entry_t),                  \
                                                         ID,                                               \
                                                         VERSION,                                          \
                                                         DESCRIPTION,                                      \
                                                         &::toolhost::sdk::detail::init_trampoline<&INIT>, \
                                                         &::toolhost::sdk::detail::deinit_trampoline};     \
  }
