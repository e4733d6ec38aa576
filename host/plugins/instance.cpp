#include "host/plugins/instance.hpp"

#include <csignal>
#include <cstring>
#include <exception>
#include <optional>
#include <toolhost/sdk/strings.hpp>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/status.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/log.hpp"
#include "host/plugins/abi_struct.hpp"
#include "host/plugins/crash_guard.hpp"
#include "host/plugins/settings_check.hpp"

namespace toolhost::plugins {
namespace {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

void put(json_writer& w, const char* key, const char* value) {
  if (value == nullptr) return;
  w.Key(key);
  w.String(value);
}

// The name, title and description of a tool, resource or prompt descriptor.
template <class Desc>
void put_names(json_writer& w, const Desc& d) {
  put(w, "name", d.name);
  put(w, "title", d.title);
  put(w, "description", d.description);
}

// Checks that `text` is a JSON object (with type "object" when `schema`) and writes it under
// `key`. Returns a sentence naming the problem, or an empty string.
std::string put_json(json_writer& w, const char* key, const char* text, bool schema) {
  rapidjson::Document doc;
  doc.Parse(text);
  if (doc.HasParseError() || !doc.IsObject()) return cat(key, " is not a JSON object");
  if (schema) {
    const auto* type = sdk::member(doc, "type");
    if (type == nullptr || !type->IsString() || std::strcmp(type->GetString(), "object") != 0) {
      return cat(key, " must be a JSON Schema with \"type\": \"object\"");
    }
  }
  w.Key(key);
  doc.Accept(w);
  return "";
}

toolhost_status_t refuse(const toolhost_host_t* host, toolhost_writer_t* error, toolhost_status_t code, load_status why,
                         const std::string& message) {
  sdk::write(error, message);
  instance::of(host).refuse(why, message);
  return code;
}

toolhost_status_t from_status(const toolhost_host_t* host, toolhost_writer_t* error, const absl::Status& s) {
  if (s.ok()) return TOOLHOST_OK;
  const bool dup = s.code() == absl::StatusCode::kAlreadyExists;
  return refuse(host, error, sdk::to_status_code(s.code()),
                dup ? load_status::duplicate_name : load_status::init_failed, std::string(s.message()));
}

// Registration is only open while the plugin's init runs.
bool open_for_registration(const toolhost_host_t* host, toolhost_writer_t* error) {
  if (instance::of(host).initializing()) return true;
  sdk::write(error, "registration is only possible during init");
  return false;
}

config::permission to_permission(toolhost_permission_t p) {
  switch (p) {
    case TOOLHOST_PERMISSION_ALLOW: return config::permission::allow;
    case TOOLHOST_PERMISSION_NEVER: return config::permission::never;
    default: return config::permission::ask;
  }
}

// ---- toolhost.registry/1 ----

// What every register_* starts with: registration is open, and `in` reads by the growth rule.
// On failure sets `code` (the refusal fails the init) and returns nullopt.
template <class T>
std::optional<T> registration(const toolhost_host_t* host, const T* in, std::string_view name, toolhost_writer_t* error,
                              toolhost_status_t& code) {
  code = TOOLHOST_ERR_WRONG_STATE;
  if (!open_for_registration(host, error)) return std::nullopt;
  auto r = read_struct(in, name);
  if (r.ok()) return *r;
  code = refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                std::string(view(r.status().message())));
  return std::nullopt;
}

constexpr uint32_t kKnownToolFlags = TOOLHOST_TOOL_CONCURRENT | TOOLHOST_TOOL_SUGGESTION | TOOLHOST_TOOL_REVIEWABLE |
                                     TOOLHOST_TOOL_TASKS | TOOLHOST_TOOL_TASKS_REQUIRED;

toolhost_status_t register_permission_kind(const toolhost_host_t* host, const toolhost_permission_kind_desc_t* in,
                                           toolhost_writer_t* error) {
  toolhost_status_t code;
  const auto d = registration(host, in, "toolhost_permission_kind_desc_t", error, code);
  if (!d) return code;
  instance& self = instance::of(host);
  permission_kind k{d->id != nullptr ? d->id : "", d->label != nullptr ? d->label : "", to_permission(d->default_value),
                    self.lib().id};
  return from_status(host, error, self.reg().add_permission_kind(std::move(k)));
}

toolhost_status_t register_tool(const toolhost_host_t* host, const toolhost_tool_desc_t* in, toolhost_writer_t* error) {
  toolhost_status_t code;
  const auto d = registration(host, in, "toolhost_tool_desc_t", error, code);
  if (!d) return code;
  instance& self = instance::of(host);
  const std::string name = d->name != nullptr ? d->name : "";
  if (d->call == nullptr) {
    return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                  cat("tool '", name, "' has no call function"));
  }
  if ((d->flags & ~kKnownToolFlags) != 0) {
    return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                  absl::StrFormat("tool '%s' sets flags 0x%x that this toolhost does not know; the plugin needs a "
                                  "newer toolhost, or must leave them unset",
                                  name, d->flags & ~kKnownToolFlags));
  }
  rapidjson::StringBuffer buffer;
  json_writer w(buffer);
  w.StartObject();
  put_names(w, *d);
  std::string problem;
  if (d->input_schema != nullptr) {
    problem = put_json(w, "inputSchema", d->input_schema, true);
  } else {
    w.Key("inputSchema");
    w.RawValue(R"({"type":"object","additionalProperties":false})", 46, rapidjson::kObjectType);
  }
  if (problem.empty() && d->output_schema != nullptr) problem = put_json(w, "outputSchema", d->output_schema, true);
  if (problem.empty() && d->annotations != nullptr) problem = put_json(w, "annotations", d->annotations, false);
  w.EndObject();
  if (!problem.empty()) {
    return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                  cat("tool '", name, "': ", problem));
  }
  tool t;
  t.name = name;
  t.owner = self.lib().id;
  t.permission_kind = d->permission_kind != nullptr ? d->permission_kind : kRunKind;
  t.flags = d->flags;
  t.listing.assign(buffer.GetString(), buffer.GetSize());
  t.has_output_schema = d->output_schema != nullptr;
  t.call = d->call;
  t.user_data = d->user_data;
  return from_status(host, error, self.reg().add_tool(std::move(t)));
}

toolhost_status_t register_resource(const toolhost_host_t* host, const toolhost_resource_desc_t* in,
                                    toolhost_writer_t* error) {
  toolhost_status_t code;
  const auto d = registration(host, in, "toolhost_resource_desc_t", error, code);
  if (!d) return code;
  instance& self = instance::of(host);
  if (d->uri == nullptr || d->name == nullptr || d->read == nullptr) {
    return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                  "a resource needs a uri, a name and a read function");
  }
  rapidjson::StringBuffer buffer;
  json_writer w(buffer);
  w.StartObject();
  put(w, d->is_template ? "uriTemplate" : "uri", d->uri);
  put_names(w, *d);
  put(w, "mimeType", d->mime_type);
  w.EndObject();
  resource r{d->uri,       d->is_template, std::string(buffer.GetString(), buffer.GetSize()), d->read, d->complete,
             d->user_data, self.lib().id};
  return from_status(host, error, self.reg().add_resource(std::move(r)));
}

toolhost_status_t register_prompt(const toolhost_host_t* host, const toolhost_prompt_desc_t* in,
                                  toolhost_writer_t* error) {
  toolhost_status_t code;
  const auto d = registration(host, in, "toolhost_prompt_desc_t", error, code);
  if (!d) return code;
  instance& self = instance::of(host);
  if (d->name == nullptr || d->get == nullptr) {
    return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                  "a prompt needs a name and a get function");
  }
  rapidjson::StringBuffer buffer;
  json_writer w(buffer);
  w.StartObject();
  put_names(w, *d);
  if (d->arguments != nullptr) {
    rapidjson::Document args;
    args.Parse(d->arguments);
    if (args.HasParseError() || !args.IsArray()) {
      return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                    cat("prompt '", d->name, "': arguments must be a JSON array"));
    }
    w.Key("arguments");
    args.Accept(w);
  }
  w.EndObject();
  prompt p{d->name,      std::string(buffer.GetString(), buffer.GetSize()), d->get, d->complete, d->user_data,
           self.lib().id};
  return from_status(host, error, self.reg().add_prompt(std::move(p)));
}

toolhost_status_t register_provider(const toolhost_host_t* host, const toolhost_provider_desc_t* d,
                                    toolhost_writer_t* error) {
  if (!open_for_registration(host, error)) return TOOLHOST_ERR_WRONG_STATE;
  instance& self = instance::of(host);
  // A table of functions the plugin offers: what this host does not know it never calls.
  auto desc = read_struct(d, "toolhost_provider_desc_t", tail::ignored);
  if (!desc.ok()) {
    return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                  std::string(view(desc.status().message())));
  }
  provider p;
  p.desc = *desc;
  p.owner = self.lib().id;
  self.reg().add_provider(std::move(p));
  return TOOLHOST_OK;
}

toolhost_status_t register_transport(const toolhost_host_t* host, const toolhost_transport_desc_t* in,
                                     toolhost_writer_t* error) {
  toolhost_status_t code;
  const auto d = registration(host, in, "toolhost_transport_desc_t", error, code);
  if (!d) return code;
  instance& self = instance::of(host);
  if (d->kind == nullptr || d->name == nullptr || d->factory == nullptr) {
    return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::init_failed,
                  "a transport needs a kind, a name and a factory");
  }
  return from_status(host, error, self.reg().add_transport({d->kind, d->name, d->factory, self.lib().id}));
}

toolhost_status_t add_instructions(const toolhost_host_t* host, const char* text) {
  instance& self = instance::of(host);
  if (!self.initializing()) return TOOLHOST_ERR_WRONG_STATE;
  self.reg().add_instructions(self.lib().id, text != nullptr ? text : "");
  return TOOLHOST_OK;
}

toolhost_status_t declare_settings(const toolhost_host_t* host, const char* schema_json, toolhost_writer_t* error) {
  if (!open_for_registration(host, error)) return TOOLHOST_ERR_WRONG_STATE;
  instance& self = instance::of(host);
  if (self.settings_declared()) {
    return refuse(host, error, TOOLHOST_ERR_WRONG_STATE, load_status::init_failed,
                  "declared its settings twice; declare_settings may be called once");
  }
  self.mark_settings_declared();
  const absl::Status s = check_settings(schema_json != nullptr ? schema_json : "", self.settings_json(),
                                        self.settings_origin(), {self.lib().id, self.server_name(), self.listing()});
  if (s.ok()) return TOOLHOST_OK;
  return refuse(host, error, TOOLHOST_ERR_INVALID_ARGUMENT, load_status::bad_settings, std::string(view(s.message())));
}

const toolhost_registry_t kRegistry = {sizeof(toolhost_registry_t), register_permission_kind, register_tool,
                                       register_resource,           register_prompt,          register_provider,
                                       register_transport,          add_instructions,         declare_settings};

// ---- toolhost.log/1 ----

void log_write(const toolhost_host_t* host, toolhost_log_level_t level, const char* message) {
  log::level l = level <= TOOLHOST_LOG_DEBUG     ? log::level::debug
                 : level <= TOOLHOST_LOG_NOTICE  ? log::level::info
                 : level == TOOLHOST_LOG_WARNING ? log::level::warning
                                                 : log::level::error;
  log::write(l, instance::of(host).lib().id, message != nullptr ? message : "");
}

const toolhost_log_t kLog = {sizeof(toolhost_log_t), log_write};

// ---- toolhost.settings/1 ----

void settings_get(const toolhost_host_t* host, toolhost_writer_t* out) {
  sdk::write(out, instance::of(host).settings_json());
}
const char* settings_server_name(const toolhost_host_t* host) { return instance::of(host).server_name().c_str(); }
const char* settings_config_dir(const toolhost_host_t* host) { return instance::of(host).config_dir().c_str(); }

const toolhost_settings_t kSettings = {sizeof(toolhost_settings_t), settings_get, settings_server_name,
                                       settings_config_dir};

// ---- toolhost.notify/1 ----

void notify_list_changed(const toolhost_host_t* host, uint32_t lists) {
  instance& self = instance::of(host);
  self.events().list_changed(self.lib().id, lists);
}
void notify_resource_updated(const toolhost_host_t* host, const char* uri) {
  if (uri != nullptr) instance::of(host).events().resource_updated(uri);
}
void notify_log(const toolhost_host_t* host, toolhost_log_level_t level, const char* logger, const char* data) {
  instance::of(host).events().log(level, logger != nullptr ? logger : "", data != nullptr ? data : "null");
}

const toolhost_notify_t kNotify = {sizeof(toolhost_notify_t), notify_list_changed, notify_resource_updated, notify_log};

// ---- toolhost.transports/1 ----

const void* transports_find(const toolhost_host_t* host, const char* kind, const char* name) {
  if (kind == nullptr || name == nullptr) return nullptr;
  const transport* t = instance::of(host).reg().find_transport(kind, name);
  return t != nullptr ? t->factory : nullptr;
}
void transports_list(const toolhost_host_t* host, const char* kind, toolhost_writer_t* out) {
  std::string list = "[";
  for (const auto& t : instance::of(host).reg().transports()) {
    if (kind != nullptr && t.kind != kind) continue;
    if (list.size() > 1) list += ',';
    list += sdk::quote(t.name);
  }
  sdk::write(out, list + "]");
}

const toolhost_transports_t kTransports = {sizeof(toolhost_transports_t), transports_find, transports_list};

const void* get_service(const toolhost_host_t*, const char* id) {
  if (id == nullptr) return nullptr;
  // Exact matches only: "toolhost.registry/1x" is not "toolhost.registry/1".
  if (std::strcmp(id, TOOLHOST_REGISTRY_ID) == 0) return &kRegistry;
  if (std::strcmp(id, TOOLHOST_LOG_ID) == 0) return &kLog;
  if (std::strcmp(id, TOOLHOST_SETTINGS_ID) == 0) return &kSettings;
  if (std::strcmp(id, TOOLHOST_NOTIFY_ID) == 0) return &kNotify;
  if (std::strcmp(id, TOOLHOST_TRANSPORTS_ID) == 0) return &kTransports;
  return nullptr;
}

}  // namespace

instance::instance(library& lib, registry& reg, host_events& events, std::string server_name, std::string config_dir,
                   std::string settings_json, bool listing, config::settings_origin origin, bool checking)
    : lib_(lib),
      registry_(reg),
      events_(events),
      server_name_(std::move(server_name)),
      config_dir_(std::move(config_dir)),
      settings_json_(settings_json.empty() ? "{}" : std::move(settings_json)),
      settings_origin_(std::move(origin)) {
  host_.abi_major = TOOLHOST_ABI_MAJOR;
  host_.abi_minor = TOOLHOST_ABI_MINOR;
  host_.struct_size = sizeof(host_);
  host_.name = "toolhost";
  host_.version = TOOLHOST_VERSION;
  host_.host_data = this;
  host_.get_service = get_service;
  host_.flags = (listing ? TOOLHOST_HOST_LISTING : 0u) | (checking ? TOOLHOST_HOST_CHECKING : 0u);
}

void instance::refuse(load_status why, std::string message) {
  if (refused_) return;
  refused_ = true;
  refused_status_ = why;
  refused_message_ = std::move(message);
}

bool instance::init() {
  sdk::string_writer error;
  bool ok = false;
  std::string thrown;
  initializing_ = true;
  const int sig = run_guarded([&] {
    try {
      ok = lib_.init(&host_, &plugin_instance_, error.raw());
    } catch (const std::exception& e) {  // a plugin not built with the SDK may still throw
      thrown = e.what();
    } catch (...) {
      thrown = "an unknown exception";
    }
  });
  initializing_ = false;

  const std::string who = cat("plugin '", lib_.id, "' (", lib_.path, ")");
  if (sig != 0) {
    status_ = load_status::init_crashed;
    message_ = cat(who, " crashed in init with ", signal_name(sig), " while starting for server '", server_name_,
                   "'; it is not served; report this to the plugin's author");
  } else if (!thrown.empty()) {
    status_ = load_status::init_failed;
    message_ = cat(who, " threw from init (", thrown, ") while starting for server '", server_name_,
                   "'; it is not served; report this to the plugin's author");
  } else if (refused_ && refused_status_ == load_status::bad_settings) {
    // A line of the config is wrong: the sentence starts with its place and names the server and
    // the plugin in its key, as config errors do.
    status_ = refused_status_;
    message_ = refused_message_;
  } else if (refused_) {
    status_ = refused_status_;
    message_ = cat(who, ": ", refused_message_);
  } else if (!ok) {
    status_ = load_status::init_failed;
    message_ = cat(who, " failed to start for server '", server_name_,
                   "': ", error.text().empty() ? "its init gave no reason" : error.text(), "; check [servers.",
                   server_name_, ".settings.", lib_.id, "] in the config");
  } else {
    status_ = load_status::loaded;
    active_ = true;
    return true;
  }
  // A plugin that registered something and then failed keeps nothing. If init had succeeded
  // before a registration was refused, undo it too.
  if (ok && sig == 0 && lib_.deinit != nullptr) lib_.deinit(plugin_instance_);
  registry_.withdraw(lib_.id);
  log::warning("plugins", message_);
  return false;
}

void instance::deinit() {
  if (!active_) return;
  active_ = false;
  if (lib_.deinit != nullptr) lib_.deinit(plugin_instance_);
}

}  // namespace toolhost::plugins
