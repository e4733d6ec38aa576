#include "host/mcp/catalog.hpp"

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

#include "host/log.hpp"
#include "host/mcp/fault_log.hpp"
#include "host/mcp/pagination.hpp"
#include "host/mcp/uri_template.hpp"

namespace toolhost::mcp {
namespace {

// A tool's x-mcp-header annotations (tool_target::header_params); invalid ones are reported and
// not enforced, since clients drop such a tool.
std::shared_ptr<const std::vector<sdk::param_headers::annotation>> header_params_of(const rapidjson::Value& tool,
                                                                                    std::string_view owner) {
  const rapidjson::Value* schema = tool.IsObject() ? sdk::member(tool, "inputSchema") : nullptr;
  if (schema == nullptr) return nullptr;
  auto found = sdk::param_headers::annotations_of(*schema);
  if (!found.ok()) {
    log::warning("catalog", cat("plugin '", owner, "' gives tool ", sdk::string_member(tool, "name").value_or("?"),
                                " an invalid x-mcp-header (", found.status().message(),
                                "); 2026-07-28 clients over HTTP will leave the tool out"));
    return nullptr;
  }
  if (found->empty()) return nullptr;
  return std::make_shared<const std::vector<sdk::param_headers::annotation>>(*std::move(found));
}

}  // namespace

absl::StatusOr<std::string> catalog::page(const char* field, const std::vector<listing>& items,
                                          const std::string& cursor) const {
  auto p = paginate(items, cursor, page_size_);
  if (!p.ok()) return p.status();
  return page_result(field, items, *p);
}

std::vector<catalog::listing> catalog::provided(list_fn toolhost_provider_desc_t::*list, const char* key) const {
  std::vector<listing> out;
  for (const auto& p : registry_.providers()) {
    list_fn fn = p.desc.*list;
    if (fn == nullptr) continue;
    sdk::string_writer text;
    fn(p.desc.user_data, text.raw());
    auto doc = sdk::parse_json(text.text());
    if (!doc || !doc->IsArray()) {
      log::warning("catalog", cat("plugin '", p.owner, "' listed something that is not a JSON array; ignored"));
      continue;
    }
    for (const auto& item : doc->GetArray()) {
      out.emplace_back(std::string(sdk::string_member(item, key).value_or("")), sdk::to_json(item));
    }
  }
  return out;
}

// ---- Tools ------------------------------------------------------------------------------------

namespace {

const char* task_support_of(uint32_t flags) {
  if ((flags & TOOLHOST_TOOL_TASKS) == 0) return nullptr;
  return (flags & TOOLHOST_TOOL_TASKS_REQUIRED) != 0 ? "required" : "optional";
}

// The listing with {"execution":{"taskSupport":...}}, or without any execution member.
std::string with_task_support(const std::string& listing, const char* support) {
  auto doc = sdk::parse_json(listing);
  if (!doc || !doc->IsObject()) return listing;
  doc->RemoveMember("execution");
  if (support != nullptr) {
    auto& a = doc->GetAllocator();
    rapidjson::Value execution(rapidjson::kObjectType);
    execution.AddMember("taskSupport", rapidjson::StringRef(support), a);
    doc->AddMember("execution", execution, a);
  }
  return sdk::to_json(*doc);
}

}  // namespace

std::vector<catalog::listing> catalog::tools(bool task_support) {
  std::vector<listing> out;
  for (const auto& t : registry_.tools()) {
    const char* support = task_support ? task_support_of(t.flags) : nullptr;
    out.emplace_back(t.name, support != nullptr ? with_task_support(t.listing, support) : t.listing);
  }
  std::unordered_map<std::string, tool_target> seen;
  for (const auto& p : registry_.providers()) {
    if (p.desc.list_tools == nullptr) continue;
    sdk::string_writer text;
    p.desc.list_tools(p.desc.user_data, text.raw());
    auto doc = sdk::parse_json(text.text());
    if (!doc || !doc->IsArray()) {
      log::warning("catalog", cat("plugin '", p.owner, "' listed tools that are not a JSON array; ignored"));
      continue;
    }
    for (auto& item : doc->GetArray()) {
      const std::string name(sdk::string_member(item, "name").value_or(""));
      if (!plugins::valid_tool_name(name) || registry_.find_tool(name) != nullptr || seen.count(name) != 0) continue;
      tool_target target;
      target.provider = &p;
      target.header_params = header_params_of(item, p.owner);
      target.permission_kind =
          std::string(sdk::string_member(item, "x-toolhost-permission").value_or(plugins::kRunKind));
      // A provider marks a tool that may run long (a proxied call) with x-toolhost-tasks.
      const std::string tasks(sdk::string_member(item, "x-toolhost-tasks").value_or(""));
      if (tasks == "optional" || tasks == "required") {
        target.flags |= TOOLHOST_TOOL_TASKS | (tasks == "required" ? TOOLHOST_TOOL_TASKS_REQUIRED : 0);
      }
      if (item.IsObject()) {  // the host's, not the client's
        item.RemoveMember("x-toolhost-permission");
        item.RemoveMember("x-toolhost-tasks");
      }
      const char* support = task_support ? task_support_of(target.flags) : nullptr;
      seen.emplace(name, std::move(target));
      std::string text = sdk::to_json(item);
      // An upstream's own execution member says what the upstream does, not what toolhost does.
      out.emplace_back(name, with_task_support(text, support));
    }
  }
  std::lock_guard lock(mutex_);
  provided_tools_ = std::move(seen);
  provided_tools_valid_ = true;
  return out;
}

std::optional<catalog::tool_target> catalog::find_tool(std::string_view name) {
  if (const plugins::tool* t = registry_.find_tool(name)) {
    tool_target target;
    target.tool = t;
    target.permission_kind = t->permission_kind;
    target.flags = t->flags;
    std::lock_guard lock(mutex_);
    auto [it, added] = registered_header_params_.try_emplace(t);
    if (added) {
      if (auto doc = sdk::parse_json(t->listing)) it->second = header_params_of(*doc, t->owner);
    }
    target.header_params = it->second;
    return target;
  }
  {
    std::lock_guard lock(mutex_);
    if (provided_tools_valid_) {
      auto it = provided_tools_.find(std::string(name));
      if (it != provided_tools_.end()) return it->second;
    }
  }
  tools();  // not known yet, or the lists changed: ask the providers again
  std::lock_guard lock(mutex_);
  auto it = provided_tools_.find(std::string(name));
  if (it == provided_tools_.end()) return std::nullopt;
  return it->second;
}

bool catalog::call_tool(const tool_target& target, const toolhost_call_t* context, const std::string& name,
                        const std::string& args, sdk::string_writer& out) {
  // Named in the log should the plugin crash in it (fault_log.hpp).
  fault_log::in_call running("tool", name, target.tool != nullptr ? target.tool->owner : target.provider->owner,
                             registry_.server_name());
  if (target.tool != nullptr) {
    target.tool->call(target.tool->user_data, context, args.data(), args.size(), out.raw());
    return true;
  }
  return target.provider->desc.call_tool(target.provider->desc.user_data, context, name.c_str(), args.data(),
                                         args.size(), out.raw());
}

bool catalog::call_unlisted_tool(const toolhost_call_t* context, const std::string& name, const std::string& args,
                                 sdk::string_writer& out) {
  for (const auto& p : registry_.providers()) {
    if (p.desc.call_tool == nullptr) continue;
    fault_log::in_call running("tool", name, p.owner, registry_.server_name());
    if (p.desc.call_tool(p.desc.user_data, context, name.c_str(), args.data(), args.size(), out.raw())) return true;
    out.take();
  }
  return false;
}

void catalog::tools_changed() {
  std::lock_guard lock(mutex_);
  provided_tools_valid_ = false;
}

// ---- Resources --------------------------------------------------------------------------------

std::vector<catalog::listing> catalog::resources() {
  std::vector<listing> out;
  for (const auto& r : registry_.resources()) {
    if (!r.is_template) out.emplace_back(r.uri, r.listing);
  }
  for (auto& item : provided(&toolhost_provider_desc_t::list_resources, "uri")) out.push_back(std::move(item));
  return out;
}

std::vector<catalog::listing> catalog::resource_templates() {
  std::vector<listing> out;
  for (const auto& r : registry_.resources()) {
    if (r.is_template) out.emplace_back(r.uri, r.listing);
  }
  for (auto& item : provided(&toolhost_provider_desc_t::list_resource_templates, "uriTemplate")) {
    out.push_back(std::move(item));
  }
  return out;
}

bool catalog::resource_exists(std::string_view uri) {
  for (const auto& r : registry_.resources()) {
    if (r.is_template ? uri_template_matches(r.uri, uri) : r.uri == uri) return true;
  }
  for (const auto& [listed, item] : provided(&toolhost_provider_desc_t::list_resources, "uri")) {
    if (listed == uri) return true;
  }
  for (const auto& [pattern, item] : provided(&toolhost_provider_desc_t::list_resource_templates, "uriTemplate")) {
    if (uri_template_matches(pattern, uri)) return true;
  }
  return false;
}

toolhost_status_t catalog::read_resource(const toolhost_call_t* context, const std::string& uri,
                                         sdk::string_writer& out) {
  // Readers are tried from the most specific (the exact URI) to the least (providers); when none
  // has it, the first one's sentence saying why is the answer's.
  std::string why;
  auto attempt = [&](toolhost_resource_read_fn read, void* user_data, const std::string& owner) {
    fault_log::in_call running("resource", uri, owner, registry_.server_name());
    const toolhost_status_t s = read(user_data, context, uri.c_str(), out.raw());
    if (s != TOOLHOST_ERR_NOT_FOUND) return s;
    std::string said = out.take();
    if (why.empty()) why = std::move(said);
    return s;
  };
  for (const auto& r : registry_.resources()) {
    if (r.is_template || r.uri != uri) continue;
    if (auto s = attempt(r.read, r.user_data, r.owner); s != TOOLHOST_ERR_NOT_FOUND) return s;
  }
  for (const auto& r : registry_.resources()) {
    if (!r.is_template || !uri_template_matches(r.uri, uri)) continue;
    if (auto s = attempt(r.read, r.user_data, r.owner); s != TOOLHOST_ERR_NOT_FOUND) return s;
  }
  for (const auto& p : registry_.providers()) {
    if (p.desc.read_resource == nullptr) continue;
    if (auto s = attempt(p.desc.read_resource, p.desc.user_data, p.owner); s != TOOLHOST_ERR_NOT_FOUND) return s;
  }
  sdk::write(out.raw(), why);
  return TOOLHOST_ERR_NOT_FOUND;
}

// ---- Prompts and completion -------------------------------------------------------------------

std::vector<catalog::listing> catalog::prompts() {
  std::vector<listing> out;
  for (const auto& p : registry_.prompts()) out.emplace_back(p.name, p.listing);
  for (auto& item : provided(&toolhost_provider_desc_t::list_prompts, "name")) out.push_back(std::move(item));
  return out;
}

toolhost_status_t catalog::get_prompt(const toolhost_call_t* context, const std::string& name, const std::string& args,
                                      sdk::string_writer& out) {
  if (const plugins::prompt* p = registry_.find_prompt(name)) {
    fault_log::in_call running("prompt", name, p->owner, registry_.server_name());
    return p->get(p->user_data, context, args.c_str(), out.raw());
  }
  for (const auto& pr : registry_.providers()) {
    if (pr.desc.get_prompt == nullptr) continue;
    fault_log::in_call running("prompt", name, pr.owner, registry_.server_name());
    const toolhost_status_t s = pr.desc.get_prompt(pr.desc.user_data, context, name.c_str(), args.c_str(), out.raw());
    if (s != TOOLHOST_ERR_NOT_FOUND) return s;
    out.take();
  }
  return TOOLHOST_ERR_NOT_FOUND;
}

bool catalog::complete(std::string_view ref_type, const std::string& ref_name, const std::string& ref_json,
                       const std::string& argument, const std::string& value, const std::string& context_json,
                       sdk::string_writer& out) {
  if (ref_type == "ref/prompt") {
    if (const plugins::prompt* p = registry_.find_prompt(ref_name)) {
      if (p->complete != nullptr)
        p->complete(p->user_data, argument.c_str(), value.c_str(), context_json.c_str(), out.raw());
      return true;
    }
  } else {
    for (const auto& r : registry_.resources()) {
      if (r.uri != ref_name) continue;
      if (r.complete != nullptr)
        r.complete(r.user_data, argument.c_str(), value.c_str(), context_json.c_str(), out.raw());
      return true;
    }
  }
  for (const auto& p : registry_.providers()) {
    if (p.desc.complete != nullptr && p.desc.complete(p.desc.user_data, ref_json.c_str(), argument.c_str(),
                                                      value.c_str(), context_json.c_str(), out.raw())) {
      return true;
    }
  }
  return false;
}

}  // namespace toolhost::mcp
