#include "host/plugins/isolation/snapshot.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

namespace toolhost::plugins::isolation {
namespace {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

void str(json_writer& w, const char* key, std::string_view value) {
  w.Key(key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void raw(json_writer& w, const char* key, const std::string& json) {
  w.Key(key);
  w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
}

std::string text(const rapidjson::Value& v, const char* key) {
  return std::string(sdk::string_member(v, key).value_or(""));
}

bool flag(const rapidjson::Value& v, const char* key) {
  const auto* m = sdk::member(v, key);
  return m != nullptr && m->IsTrue();
}

std::string listing(const rapidjson::Value& v) {
  const auto* m = sdk::member(v, "listing");
  return m != nullptr ? sdk::to_json(*m) : "{}";
}

const rapidjson::Value* array(const rapidjson::Value& doc, const char* key) {
  const auto* m = sdk::member(doc, key);
  return m != nullptr && m->IsArray() ? m : nullptr;
}

}  // namespace

uint32_t provider_callbacks(const toolhost_provider_desc_t& d) {
  const bool has[] = {d.list_tools != nullptr,     d.call_tool != nullptr,
                      d.list_resources != nullptr, d.list_resource_templates != nullptr,
                      d.read_resource != nullptr,  d.list_prompts != nullptr,
                      d.get_prompt != nullptr,     d.complete != nullptr,
                      d.instructions != nullptr};
  uint32_t bits = 0;
  for (size_t i = 0; i < sizeof has / sizeof has[0]; ++i) bits |= has[i] ? 1u << i : 0;
  return bits;
}

std::string snapshot_of(const registry& reg, const std::vector<plugin_outcome>& outcomes) {
  rapidjson::StringBuffer buffer;
  json_writer w(buffer);
  w.StartObject();
  w.Key("plugins");
  w.StartArray();
  for (const auto& o : outcomes) {
    w.StartObject();
    str(w, "id", o.id);
    w.Key("started");
    w.Bool(o.started);
    str(w, "status", o.status);
    str(w, "message", o.message);
    w.EndObject();
  }
  w.EndArray();
  w.Key("kinds");
  w.StartArray();
  for (const auto& k : reg.kinds()) {
    if (k.owner == "toolhost") continue;  // every registry has the built-in ones
    w.StartObject();
    str(w, "id", k.id);
    str(w, "label", k.label);
    str(w, "default", config::to_string(k.default_value));
    str(w, "owner", k.owner);
    w.EndObject();
  }
  w.EndArray();
  w.Key("tools");
  w.StartArray();
  for (const auto& t : reg.tools()) {
    w.StartObject();
    str(w, "name", t.name);
    str(w, "owner", t.owner);
    str(w, "kind", t.permission_kind);
    w.Key("flags");
    w.Uint(t.flags);
    w.Key("output_schema");
    w.Bool(t.has_output_schema);
    raw(w, "listing", t.listing);
    w.EndObject();
  }
  w.EndArray();
  w.Key("resources");
  w.StartArray();
  for (const auto& r : reg.resources()) {
    w.StartObject();
    str(w, "uri", r.uri);
    w.Key("template");
    w.Bool(r.is_template);
    w.Key("complete");
    w.Bool(r.complete != nullptr);
    str(w, "owner", r.owner);
    raw(w, "listing", r.listing);
    w.EndObject();
  }
  w.EndArray();
  w.Key("prompts");
  w.StartArray();
  for (const auto& p : reg.prompts()) {
    w.StartObject();
    str(w, "name", p.name);
    w.Key("complete");
    w.Bool(p.complete != nullptr);
    str(w, "owner", p.owner);
    raw(w, "listing", p.listing);
    w.EndObject();
  }
  w.EndArray();
  w.Key("instructions");
  w.StartArray();
  for (const auto& [owner, body] : reg.instruction_items()) {
    w.StartObject();
    str(w, "owner", owner);
    str(w, "text", body);
    w.EndObject();
  }
  w.EndArray();
  w.Key("transports");
  w.StartArray();
  for (const auto& t : reg.transports()) {
    w.StartObject();
    str(w, "kind", t.kind);
    str(w, "name", t.name);
    str(w, "owner", t.owner);
    w.EndObject();
  }
  w.EndArray();
  w.Key("providers");
  w.StartArray();
  for (const auto& p : reg.providers()) {
    w.StartObject();
    str(w, "owner", p.owner);
    w.Key("callbacks");
    w.Uint(provider_callbacks(p.desc));
    w.Key("instructions_wait_ms");
    w.Uint(p.desc.instructions_wait_ms);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

absl::StatusOr<snapshot> read_snapshot(std::string_view json) {
  auto doc = sdk::parse_json(json);
  if (!doc || !doc->IsObject()) return absl::InvalidArgumentError("its list of registrations is not a JSON object");
  snapshot s;
  if (const auto* a = array(*doc, "plugins")) {
    for (const auto& v : a->GetArray())
      s.outcomes.push_back({text(v, "id"), flag(v, "started"), text(v, "status"), text(v, "message")});
  }
  if (const auto* a = array(*doc, "kinds")) {
    for (const auto& v : a->GetArray()) {
      permission_kind k;
      k.id = text(v, "id");
      k.label = text(v, "label");
      k.default_value = config::parse_permission(text(v, "default")).value_or(config::permission::ask);
      k.owner = text(v, "owner");
      s.kinds.push_back(std::move(k));
    }
  }
  if (const auto* a = array(*doc, "tools")) {
    for (const auto& v : a->GetArray()) {
      tool t;
      t.name = text(v, "name");
      t.owner = text(v, "owner");
      t.permission_kind = text(v, "kind");
      const auto* f = sdk::member(v, "flags");
      t.flags = f != nullptr && f->IsUint() ? f->GetUint() : 0;
      t.has_output_schema = flag(v, "output_schema");
      t.listing = listing(v);
      s.tools.push_back(std::move(t));
    }
  }
  if (const auto* a = array(*doc, "resources")) {
    for (const auto& v : a->GetArray()) {
      resource r;
      r.uri = text(v, "uri");
      r.is_template = flag(v, "template");
      r.owner = text(v, "owner");
      r.listing = listing(v);
      s.resources.push_back(std::move(r));
      s.resource_completes.push_back(flag(v, "complete"));
    }
  }
  if (const auto* a = array(*doc, "prompts")) {
    for (const auto& v : a->GetArray()) {
      prompt p;
      p.name = text(v, "name");
      p.owner = text(v, "owner");
      p.listing = listing(v);
      s.prompts.push_back(std::move(p));
      s.prompt_completes.push_back(flag(v, "complete"));
    }
  }
  if (const auto* a = array(*doc, "instructions")) {
    for (const auto& v : a->GetArray()) s.instructions.emplace_back(text(v, "owner"), text(v, "text"));
  }
  if (const auto* a = array(*doc, "transports")) {
    for (const auto& v : a->GetArray()) {
      transport t;
      t.kind = text(v, "kind");
      t.name = text(v, "name");
      t.owner = text(v, "owner");
      s.transports.push_back(std::move(t));
    }
  }
  if (const auto* a = array(*doc, "providers")) {
    for (const auto& v : a->GetArray()) {
      snapshot::provider_info p;
      p.owner = text(v, "owner");
      const auto* bits = sdk::member(v, "callbacks");
      const auto* wait = sdk::member(v, "instructions_wait_ms");
      p.callbacks = bits != nullptr && bits->IsUint() ? bits->GetUint() : 0;
      p.instructions_wait_ms = wait != nullptr && wait->IsUint() ? wait->GetUint() : 0;
      s.providers.push_back(std::move(p));
    }
  }
  return s;
}

}  // namespace toolhost::plugins::isolation
