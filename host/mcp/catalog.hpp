// One server's catalog: everything its plugins serve by name (tools, resources, resource
// templates, prompts, completions), registered at init or offered by providers at run time. It is
// the one place that answers "which plugin serves this name": the merged, ordered lists and their
// pages, and, for a name or URI, the plugin that answers it (including names a provider answers
// without listing them, such as a proxy's refusals for its deny list).
//
// Plugin functions are called from here (with the caller's per-call context), on the thread that
// asks: sessions call it from worker threads only.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>

#include <toolhost/plugin.h>
#include <toolhost/sdk/param_headers.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/plugins/registry.hpp"

namespace toolhost::mcp {

class catalog {
 public:
  catalog(plugins::registry& registry, size_t page_size) : registry_(registry), page_size_(page_size) {}

  // (key, MCP object as JSON): the key is a name or a URI (template), what cursors are made of.
  using listing = std::pair<std::string, std::string>;

  // {"<field>":[one page of items],"nextCursor":...}, or an invalid-cursor error.
  absl::StatusOr<std::string> page(const char* field, const std::vector<listing>& items,
                                   const std::string& cursor) const;

  // ---- Tools ----------------------------------------------------------------------------------
  // Registered tools first, then what each provider lists now, in provider order; a provided name
  // that is invalid or already taken is skipped. `task_support`: tools that may run as tasks say so
  // (2025-11-25's execution.taskSupport).
  std::vector<listing> tools(bool task_support = true);
  struct tool_target {
    const plugins::tool* tool = nullptr;          // a registered tool, or
    const plugins::provider* provider = nullptr;  // the provider that lists it
    std::string permission_kind;                  // as the plugin declared it (may be unknown)
    uint32_t flags = 0;                           // TOOLHOST_TOOL_* (registered tools)
    // The x-mcp-header annotations of its inputSchema (none when it has none, or invalid ones).
    std::shared_ptr<const std::vector<sdk::param_headers::annotation>> header_params;
  };
  // The plugin that serves tool `name`; providers are asked again when a name is not known yet.
  std::optional<tool_target> find_tool(std::string_view name);
  // Runs the target; false when a provider says it does not serve the name after all.
  bool call_tool(const tool_target& target, const toolhost_call_t* context, const std::string& name,
                 const std::string& args, sdk::string_writer& out);
  // A name nobody lists: each provider may still answer it (with an error it wants to explain);
  // false when none does.
  bool call_unlisted_tool(const toolhost_call_t* context, const std::string& name, const std::string& args,
                          sdk::string_writer& out);
  // The providers' tool lists changed.
  void tools_changed();

  // ---- Resources ------------------------------------------------------------------------------
  std::vector<listing> resources();
  std::vector<listing> resource_templates();
  // A resource with this URI exists: registered, produced by a template, or listed by a provider.
  bool resource_exists(std::string_view uri);
  // Reads `uri` from the first that serves it: the registered URI, a matching template, then each
  // provider. TOOLHOST_ERR_NOT_FOUND when nobody does.
  toolhost_status_t read_resource(const toolhost_call_t* context, const std::string& uri, sdk::string_writer& out);

  // ---- Prompts and completion -----------------------------------------------------------------
  std::vector<listing> prompts();
  toolhost_status_t get_prompt(const toolhost_call_t* context, const std::string& name, const std::string& args,
                               sdk::string_writer& out);
  // completion/complete for a ref ({"type":"ref/prompt","name"} or {"type":"ref/resource","uri"});
  // false when nothing serves the ref.
  bool complete(std::string_view ref_type, const std::string& ref_name, const std::string& ref_json,
                const std::string& argument, const std::string& value, const std::string& context_json,
                sdk::string_writer& out);

 private:
  using list_fn = void (*)(void* user_data, toolhost_writer_t* out);
  // What every provider lists with `list` (a JSON array each), keyed by the member `key`.
  std::vector<listing> provided(list_fn toolhost_provider_desc_t::*list, const char* key) const;

  plugins::registry& registry_;
  const size_t page_size_;
  std::mutex mutex_;
  bool provided_tools_valid_ = false;
  std::unordered_map<std::string, tool_target> provided_tools_;
  // Registered tools' x-mcp-header annotations, read from their listing when first asked.
  std::unordered_map<const plugins::tool*, std::shared_ptr<const std::vector<sdk::param_headers::annotation>>>
      registered_header_params_;
};

}  // namespace toolhost::mcp
