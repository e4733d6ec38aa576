#include "host/plugins/registry.hpp"

#include <algorithm>
#include <toolhost/sdk/strings.hpp>

#include <absl/strings/str_cat.h>

namespace toolhost::plugins {
namespace {

template <class T, class Pred>
void erase_if_owner(std::vector<T>& items, Pred owned) {
  items.erase(std::remove_if(items.begin(), items.end(), owned), items.end());
}

absl::Status duplicate(std::string_view what, std::string_view name, std::string_view owner, std::string_view other,
                       std::string_view server) {
  return absl::AlreadyExistsError(cat(what, " '", name, "' of plugin '", owner, "' is already registered by plugin '",
                                      other, "' in server '", server,
                                      "'; rename one of them or serve the two plugins from different servers"));
}

}  // namespace

bool valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

registry::registry(std::string server_name) : server_name_(std::move(server_name)) {
  kinds_.push_back({kRunKind, kRunLabel, config::permission::ask, "toolhost"});
}

absl::Status registry::add_permission_kind(permission_kind kind) {
  if (kind.id.empty() || kind.label.empty()) {
    return absl::InvalidArgumentError("a permission kind needs an id and a label");
  }
  if (const permission_kind* k = find_kind(kind.id)) {
    if (k->label == kind.label) return absl::OkStatus();  // the same row, shared
    return absl::AlreadyExistsError(cat("permission kind '", kind.id, "' of plugin '", kind.owner,
                                        "' is already registered by '", k->owner, "' with the label \"", k->label,
                                        "\"; use another id or the same label"));
  }
  kinds_.push_back(std::move(kind));
  return absl::OkStatus();
}

absl::Status registry::add_tool(tool t) {
  if (!valid_tool_name(t.name)) {
    return absl::InvalidArgumentError(
        cat("tool name '", t.name, "' is invalid: use 1 to 64 letters, digits, '_', '-' or '.'"));
  }
  if (const tool* other = find_tool(t.name)) return duplicate("tool", t.name, t.owner, other->owner, server_name_);
  if (find_kind(t.permission_kind) == nullptr) {
    return absl::InvalidArgumentError(cat("tool '", t.name, "' names permission kind '", t.permission_kind,
                                          "', which is not registered; register the kind first"));
  }
  if ((t.flags & TOOLHOST_TOOL_CONCURRENT) == 0) t.serial = std::make_shared<std::timed_mutex>();
  tool_index_.emplace(t.name, tools_.size());
  tools_.push_back(std::move(t));
  return absl::OkStatus();
}

absl::Status registry::add_resource(resource r) {
  for (const auto& other : resources_) {
    if (other.uri == r.uri) return duplicate("resource", r.uri, r.owner, other.owner, server_name_);
  }
  resources_.push_back(std::move(r));
  return absl::OkStatus();
}

absl::Status registry::add_prompt(prompt p) {
  if (const prompt* other = find_prompt(p.name))
    return duplicate("prompt", p.name, p.owner, other->owner, server_name_);
  prompts_.push_back(std::move(p));
  return absl::OkStatus();
}

absl::Status registry::add_transport(transport t) {
  if (const transport* other = find_transport(t.kind, t.name)) {
    return duplicate(cat("transport ", t.kind), t.name, t.owner, other->owner, server_name_);
  }
  transports_.push_back(std::move(t));
  return absl::OkStatus();
}

void registry::add_provider(provider p) { providers_.push_back(std::move(p)); }

void registry::add_instructions(std::string_view owner, std::string text) {
  if (!text.empty()) instructions_.emplace_back(std::string(owner), std::move(text));
}

std::string registry::instructions() const {
  std::string out;
  for (const auto& [owner, text] : instructions_) append(out, out.empty() ? "" : "\n\n", text);
  return out;
}

void registry::withdraw(std::string_view owner) {
  auto owned = [owner](const auto& item) { return item.owner == owner; };
  erase_if_owner(kinds_, owned);
  erase_if_owner(tools_, owned);
  tool_index_.clear();
  for (size_t i = 0; i < tools_.size(); ++i) tool_index_.emplace(tools_[i].name, i);
  erase_if_owner(resources_, owned);
  erase_if_owner(prompts_, owned);
  erase_if_owner(transports_, owned);
  erase_if_owner(providers_, owned);
  erase_if_owner(instructions_, [owner](const auto& item) { return item.first == owner; });
}

const tool* registry::find_tool(std::string_view name) const {
  auto it = tool_index_.find(name);
  return it == tool_index_.end() ? nullptr : &tools_[it->second];
}

const permission_kind* registry::find_kind(std::string_view id) const {
  for (const auto& k : kinds_) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

const prompt* registry::find_prompt(std::string_view name) const {
  for (const auto& p : prompts_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const transport* registry::find_transport(std::string_view kind, std::string_view name) const {
  for (const auto& t : transports_) {
    if (t.kind == kind && t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace toolhost::plugins
