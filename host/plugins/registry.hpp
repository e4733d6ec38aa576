// What the plugins of one server registered: permission kinds, tools, resources, prompts,
// providers, transports and instructions, each with the plugin that owns it. Filled while the
// server's plugins initialize (one thread), read-only afterwards.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <functional>
#include <unordered_map>

#include <absl/status/status.h>

#include <toolhost/plugin.h>

#include "host/config/config.hpp"

namespace toolhost::plugins {

struct permission_kind {
  std::string id;
  std::string label;
  config::permission default_value = config::permission::ask;
  std::string owner;  // plugin id; "toolhost" for built-in kinds
};

struct tool {
  std::string name;
  std::string owner;
  std::string permission_kind;
  uint32_t flags = 0;
  std::string listing;  // the MCP Tool object, JSON text
  bool has_output_schema = false;
  toolhost_tool_call_fn call = nullptr;
  void* user_data = nullptr;
  // Held around each call unless TOOLHOST_TOOL_CONCURRENT; timed, so that a call waiting for its
  // turn behind one that never ends can give up when it is cancelled or times out.
  std::shared_ptr<std::timed_mutex> serial;
};

struct resource {
  std::string uri;  // fixed URI or RFC 6570 template
  bool is_template = false;
  std::string listing;  // the MCP Resource or ResourceTemplate object, JSON text
  toolhost_resource_read_fn read = nullptr;
  toolhost_complete_fn complete = nullptr;
  void* user_data = nullptr;
  std::string owner;
};

struct prompt {
  std::string name;
  std::string listing;  // the MCP Prompt object, JSON text
  toolhost_prompt_get_fn get = nullptr;
  toolhost_complete_fn complete = nullptr;
  void* user_data = nullptr;
  std::string owner;
};

struct transport {
  std::string kind;
  std::string name;
  const void* factory = nullptr;
  std::string owner;
};

struct provider {
  toolhost_provider_desc_t desc{};
  std::string owner;
};

// The permission kind a tool gets when its plugin names none.
inline constexpr const char* kRunKind = "run";
inline constexpr const char* kRunLabel = "Run commands on this machine";

class registry {
 public:
  explicit registry(std::string server_name);

  absl::Status add_permission_kind(permission_kind kind);
  absl::Status add_tool(tool t);
  absl::Status add_resource(resource r);
  absl::Status add_prompt(prompt p);
  absl::Status add_transport(transport t);
  void add_provider(provider p);
  void add_instructions(std::string_view owner, std::string text);

  // Removes everything `owner` registered (its init failed).
  void withdraw(std::string_view owner);

  const std::vector<permission_kind>& kinds() const { return kinds_; }
  const std::vector<tool>& tools() const { return tools_; }
  const std::vector<resource>& resources() const { return resources_; }
  const std::vector<prompt>& prompts() const { return prompts_; }
  const std::vector<transport>& transports() const { return transports_; }
  const std::vector<provider>& providers() const { return providers_; }
  // Every plugin's instructions, in registration order, separated by blank lines.
  std::string instructions() const;
  // The same, by owner: (plugin id, text).
  const std::vector<std::pair<std::string, std::string>>& instruction_items() const { return instructions_; }
  const std::string& server_name() const { return server_name_; }

  const tool* find_tool(std::string_view name) const;
  const permission_kind* find_kind(std::string_view id) const;
  const prompt* find_prompt(std::string_view name) const;
  const transport* find_transport(std::string_view kind, std::string_view name) const;

 private:
  std::string server_name_;
  std::vector<permission_kind> kinds_;
  std::vector<tool> tools_;
  // name -> index in tools_: a plugin may register 100,000 tools, and a scan per registration
  // made that quadratic (30 s before the first tools/list).
  struct name_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, size_t, name_hash, std::equal_to<>> tool_index_;
  std::vector<resource> resources_;
  std::vector<prompt> prompts_;
  std::vector<transport> transports_;
  std::vector<provider> providers_;
  std::vector<std::pair<std::string, std::string>> instructions_;  // owner, text
};

// MCP's rule for tool names as the conformance suite checks it: 1-64 of [A-Za-z0-9_.-].
bool valid_tool_name(std::string_view name);

}  // namespace toolhost::plugins
