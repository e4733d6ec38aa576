#include "host/plugins/isolation/group.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/strings.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/plugins/loader.hpp"

namespace toolhost::plugins::isolation {
namespace {

group::proxy& of(void* user_data) { return *static_cast<group::proxy*>(user_data); }

void proxy_tool(void* user_data, const toolhost_call_t* call, const char* arguments, size_t size,
                toolhost_writer_t* result) {
  group::proxy& p = of(user_data);
  std::string out;
  const toolhost_status_t s = p.process->call("tool", p.plugin, p.key, std::string_view(arguments, size), call, out);
  if (s == TOOLHOST_OK) return sdk::write(result, out);
  if (s == TOOLHOST_ERR_NOT_FOUND) {
    out = cat("The plugin '", p.plugin, "' no longer registers the tool ", p.key,
              " since its process started again; restart toolhost to see its tools as they are now.");
  }
  sdk::write(result, sdk::result::error(out.empty() ? "The call was cancelled." : out).to_json());
}

toolhost_status_t proxy_read(void* user_data, const toolhost_call_t* call, const char* uri, toolhost_writer_t* result) {
  group::proxy& p = of(user_data);
  std::string out;
  const toolhost_status_t s = p.process->call("read", p.plugin, p.key, uri != nullptr ? uri : "", call, out);
  sdk::write(result, out);
  return s;
}

toolhost_status_t proxy_prompt(void* user_data, const toolhost_call_t* call, const char* arguments,
                               toolhost_writer_t* result) {
  group::proxy& p = of(user_data);
  std::string out;
  const toolhost_status_t s =
      p.process->call("prompt", p.plugin, p.key, arguments != nullptr ? arguments : "{}", call, out);
  sdk::write(result, out);
  return s;
}

void proxy_complete(void* user_data, const char* argument, const char* value, const char* context,
                    toolhost_writer_t* result) {
  group::proxy& p = of(user_data);
  const std::string args =
      cat("[", sdk::quote(argument != nullptr ? argument : ""), ",", sdk::quote(value != nullptr ? value : ""), ",",
          sdk::quote(context != nullptr ? context : "{}"), "]");
  std::string out;
  if (p.process->call("complete", p.plugin, p.complete_key, args, nullptr, out) == TOOLHOST_OK) sdk::write(result, out);
}

// ---- A provider in the child, as a provider in the parent ----

group::provider_proxy& provider_of(void* user_data) { return *static_cast<group::provider_proxy*>(user_data); }

// A list or the instructions: what the child's provider wrote, or `empty` when it failed.
void provider_list(void* user_data, const char* op, const char* empty, toolhost_writer_t* out) {
  group::provider_proxy& p = provider_of(user_data);
  std::string text;
  const bool ok = p.process->call(op, p.plugin, p.index, "", nullptr, text) == TOOLHOST_OK;
  sdk::write(out, ok ? text : empty);
}

void provided_tools(void* ud, toolhost_writer_t* out) { provider_list(ud, "p.list_tools", "[]", out); }
void provided_resources(void* ud, toolhost_writer_t* out) { provider_list(ud, "p.list_resources", "[]", out); }
void provided_templates(void* ud, toolhost_writer_t* out) { provider_list(ud, "p.list_resource_templates", "[]", out); }
void provided_prompts(void* ud, toolhost_writer_t* out) { provider_list(ud, "p.list_prompts", "[]", out); }
void provided_instructions(void* ud, toolhost_writer_t* out) { provider_list(ud, "p.instructions", "", out); }

bool provided_call(void* ud, const toolhost_call_t* call, const char* name, const char* arguments, size_t size,
                   toolhost_writer_t* result) {
  group::provider_proxy& p = provider_of(ud);
  std::string out;
  const toolhost_status_t s =
      p.process->call("p.call_tool", p.plugin, cat(p.index, " ", name), std::string_view(arguments, size), call, out);
  if (s == TOOLHOST_ERR_NOT_FOUND) return false;
  sdk::write(result,
             s == TOOLHOST_OK ? out : sdk::result::error(out.empty() ? "The call was cancelled." : out).to_json());
  return true;
}

toolhost_status_t provided_read(void* ud, const toolhost_call_t* call, const char* uri, toolhost_writer_t* result) {
  group::provider_proxy& p = provider_of(ud);
  std::string out;
  const toolhost_status_t s = p.process->call("p.read_resource", p.plugin, cat(p.index, " ", uri), "", call, out);
  sdk::write(result, out);
  return s;
}

toolhost_status_t provided_prompt(void* ud, const toolhost_call_t* call, const char* name, const char* arguments,
                                  toolhost_writer_t* result) {
  group::provider_proxy& p = provider_of(ud);
  std::string out;
  const toolhost_status_t s = p.process->call("p.get_prompt", p.plugin, cat(p.index, " ", name),
                                              arguments != nullptr ? arguments : "{}", call, out);
  sdk::write(result, out);
  return s;
}

bool provided_complete(void* ud, const char* ref, const char* argument, const char* value, const char* context,
                       toolhost_writer_t* result) {
  group::provider_proxy& p = provider_of(ud);
  const std::string args =
      cat("[", sdk::quote(ref != nullptr ? ref : "{}"), ",", sdk::quote(argument != nullptr ? argument : ""), ",",
          sdk::quote(value != nullptr ? value : ""), ",", sdk::quote(context != nullptr ? context : "{}"), "]");
  std::string out;
  if (p.process->call("p.complete", p.plugin, p.index, args, nullptr, out) != TOOLHOST_OK) return false;
  sdk::write(result, out);
  return true;
}

// The parent's provider for the child's, with a proxy wherever the child's has a function.
toolhost_provider_desc_t provider_desc(uint32_t callbacks, uint32_t wait_ms, void* user_data) {
  toolhost_provider_desc_t d{};
  d.struct_size = sizeof d;
  d.user_data = user_data;
  auto has = [&](int bit) { return (callbacks & (1u << bit)) != 0; };
  if (has(0)) d.list_tools = provided_tools;
  if (has(1)) d.call_tool = provided_call;
  if (has(2)) d.list_resources = provided_resources;
  if (has(3)) d.list_resource_templates = provided_templates;
  if (has(4)) d.read_resource = provided_read;
  if (has(5)) d.list_prompts = provided_prompts;
  if (has(6)) d.get_prompt = provided_prompt;
  if (has(7)) d.complete = provided_complete;
  if (has(8)) d.instructions = provided_instructions;
  d.instructions_wait_ms = wait_ms;
  return d;
}

void str(rapidjson::Writer<rapidjson::StringBuffer>& w, const char* key, std::string_view v) {
  w.Key(key);
  w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
}

}  // namespace

std::string start_json(const start_plan& plan) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  str(w, "server", plan.server);
  str(w, "config_dir", plan.config_dir);
  w.Key("dirs");
  w.StartArray();
  for (const auto& d : plan.dirs) w.String(d.c_str());
  w.EndArray();
  w.Key("listing");
  w.Bool(plan.listing);
  w.Key("checking");
  w.Bool(plan.checking);
  w.Key("memory_limit_mb");
  w.Uint(plan.memory_limit_mb);
  w.Key("plugins");
  w.StartArray();
  for (const auto& p : plan.plugins) {
    w.StartObject();
    str(w, "id", p.id);
    str(w, "settings", p.settings);
    str(w, "origin_table", p.origin.table);
    w.Key("origins");
    w.StartObject();
    for (const auto& [path, where] : p.origin.values) {
      w.Key(path.c_str());
      w.String(where.c_str());
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

namespace {

group_spec spec_of(std::string name, const start_plan& plan) {
  group_spec spec;
  spec.name = std::move(name);
  for (const auto& p : plan.plugins) spec.plugins.push_back(p.id);
  spec.start_json = start_json(plan);
  return spec;
}

}  // namespace

group::group(std::string name, const start_plan& plan, host_events& events)
    : process_(spec_of(std::move(name), plan), events) {}

std::vector<plugin_outcome> group::start(registry& reg) {
  std::vector<plugin_outcome> outcomes;
  auto failed_all = [&](const std::string& why) {
    for (const auto& id : plugins())
      outcomes.push_back({id, false, std::string(to_string(load_status::init_failed)), why});
    return outcomes;
  };
  auto text = process_.start();
  if (!text.ok()) return failed_all(std::string(view(text.status().message())));
  auto snap = read_snapshot(*text);
  if (!snap.ok()) return failed_all(cat("the process of plugin ", name(), " sent ", view(snap.status().message())));
  for (plugin_outcome o : snap->outcomes) {
    if (o.started) {
      // The parent's registry checks names across every plugin of the server, in process or not.
      absl::Status s;
      for (auto k : snap->kinds) {
        if (s.ok() && k.owner == o.id) s = reg.add_permission_kind(std::move(k));
      }
      for (auto t : snap->tools) {
        if (!s.ok() || t.owner != o.id) continue;
        proxies_.push_back({&process_, o.id, t.name, ""});
        t.call = proxy_tool;
        t.user_data = &proxies_.back();
        s = reg.add_tool(std::move(t));
      }
      for (size_t i = 0; i < snap->resources.size(); ++i) {
        resource r = snap->resources[i];
        if (!s.ok() || r.owner != o.id) continue;
        proxies_.push_back({&process_, o.id, r.uri, cat("resource:", r.uri)});
        r.read = proxy_read;
        r.complete = snap->resource_completes[i] ? proxy_complete : nullptr;
        r.user_data = &proxies_.back();
        s = reg.add_resource(std::move(r));
      }
      for (size_t i = 0; i < snap->prompts.size(); ++i) {
        prompt p = snap->prompts[i];
        if (!s.ok() || p.owner != o.id) continue;
        proxies_.push_back({&process_, o.id, p.name, cat("prompt:", p.name)});
        p.get = proxy_prompt;
        p.complete = snap->prompt_completes[i] ? proxy_complete : nullptr;
        p.user_data = &proxies_.back();
        s = reg.add_prompt(std::move(p));
      }
      for (size_t i = 0; i < snap->providers.size(); ++i) {
        const auto& info = snap->providers[i];
        if (!s.ok() || info.owner != o.id) continue;
        provider_proxies_.push_back({&process_, o.id, std::to_string(i)});
        reg.add_provider({provider_desc(info.callbacks, info.instructions_wait_ms, &provider_proxies_.back()), o.id});
      }
      for (const auto& [owner, body] : snap->instructions) {
        if (s.ok() && owner == o.id) reg.add_instructions(owner, body);
      }
      if (!s.ok()) {
        reg.withdraw(o.id);
        o.started = false;
        o.status = std::string(to_string(s.code() == absl::StatusCode::kAlreadyExists ? load_status::duplicate_name
                                                                                      : load_status::init_failed));
        o.message = std::string(view(s.message()));
      }
    }
    for (const auto& t : snap->transports) {
      if (o.started && t.owner == o.id) transports_.push_back(t);
    }
    outcomes.push_back(std::move(o));
  }
  return outcomes;
}

}  // namespace toolhost::plugins::isolation
