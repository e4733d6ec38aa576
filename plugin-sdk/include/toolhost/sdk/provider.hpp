// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: a provider (toolhost_provider_desc_t) in C++: tools, resources and prompts a
// plugin learns only while it runs, such as a proxy re-exposing another MCP server.
//
//   class upstream final : public toolhost::sdk::provider {
//     std::string list_tools() override { return R"([{"name":"later","inputSchema":{"type":"object"}}])"; }
//     std::optional<std::string> call_tool(sdk::call&, std::string_view name, std::string_view) override {
//       if (name != "later") return std::nullopt;
//       return sdk::result::text("called").to_json();
//     }
//   };
//   absl::Status init(sdk::plugin& p) { return p.provider(std::make_shared<upstream>()); }
//
// Every callback is [any-thread] and noexcept at the boundary: an exception in a list becomes an
// empty list, in a call a tool error, in a read or a prompt TOOLHOST_ERR_INTERNAL with its text.
// Call plugin::notify_list_changed when a list changes.
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/plugin.h>
#include <toolhost/sdk/call.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/status.hpp>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::sdk {

class provider {
 public:
  virtual ~provider() = default;

  // JSON arrays of MCP Tool objects (each may carry "x-toolhost-permission", the permission kind
  // its calls are matched to), Resource, ResourceTemplate and Prompt objects.
  virtual std::string list_tools() { return "[]"; }
  virtual std::string list_resources() { return "[]"; }
  virtual std::string list_resource_templates() { return "[]"; }
  virtual std::string list_prompts() { return "[]"; }

  // A CallToolResult as JSON, or nullopt for a name this provider does not serve.
  virtual std::optional<std::string> call_tool(call&, std::string_view /*name*/, std::string_view /*arguments_json*/) {
    return std::nullopt;
  }
  // A ReadResourceResult as JSON; NotFound for a URI it does not know (with a sentence saying
  // why, if there is more to say than that: the host's error names the URI).
  virtual absl::StatusOr<std::string> read_resource(call&, std::string_view /*uri*/) {
    return absl::NotFoundError("");
  }
  // A GetPromptResult as JSON; NotFound for a name it does not know, InvalidArgument with a
  // sentence for bad arguments.
  virtual absl::StatusOr<std::string> get_prompt(call&, std::string_view name, std::string_view /*arguments_json*/) {
    return absl::NotFoundError("no prompt " + std::string(name));
  }
  // A completion object ({"values":[...]}) for `ref_json` (the request's ref), or nullopt when
  // the reference is not this provider's.
  virtual std::optional<std::string> complete(std::string_view /*ref_json*/, std::string_view /*argument*/,
                                              std::string_view /*value*/, std::string_view /*context_json*/) {
    return std::nullopt;
  }
  // Server instructions known now; must not block (see provider_options::instructions_wait).
  virtual std::string instructions() { return {}; }
};

struct provider_options {
  // Instructions that take time: how long a client's initialize may wait for them. The provider
  // then calls plugin::notify_list_changed(TOOLHOST_LIST_INSTRUCTIONS) once they are known (or
  // known to be absent).
  std::chrono::milliseconds instructions_wait{0};
};

namespace detail {

inline provider& as_provider(void* ud) { return *static_cast<provider*>(ud); }

inline std::string_view text_or(const char* text, std::string_view fallback) {
  return text != nullptr ? std::string_view(text) : fallback;
}

// A list callback: the provider's JSON array, or "[]" when it throws.
template <std::string (provider::*List)()>
void provider_list(void* ud, toolhost_writer_t* out) noexcept {
  try {
    write(out, (as_provider(ud).*List)());
  } catch (...) {
    write(out, "[]");
  }
}

inline bool provider_call_tool(void* ud, const toolhost_call_t* raw, const char* name, const char* args, size_t size,
                               toolhost_writer_t* out) noexcept {
  const std::string_view tool = text_or(name, "");
  try {
    call context(raw);
    auto answer = as_provider(ud).call_tool(context, tool, args != nullptr ? std::string_view(args, size) : "{}");
    if (!answer) return false;
    write(out, *answer);
  } catch (const std::exception& e) {
    write(out, result::error(std::string(tool) + " failed: " + e.what()).to_json());
  } catch (...) {
    write(out, result::error(std::string(tool) + " failed with an unknown exception.").to_json());
  }
  return true;
}

// Runs `fn` (a StatusOr<std::string> of the answer) and writes the answer or the failure's
// message; returns the status's code. An exception becomes TOOLHOST_ERR_INTERNAL with its text.
template <class F>
toolhost_status_t answer(toolhost_writer_t* out, F&& fn) noexcept {
  try {
    const absl::StatusOr<std::string> text = fn();
    if (!text.ok()) return fail(out, text.status());
    write(out, *text);
    return TOOLHOST_OK;
  } catch (const std::exception& e) {
    write(out, e.what());
  } catch (...) {
  }
  return TOOLHOST_ERR_INTERNAL;
}

inline toolhost_status_t provider_read_resource(void* ud, const toolhost_call_t* raw, const char* uri,
                                                toolhost_writer_t* out) noexcept {
  return answer(out, [&] {
    call context(raw);
    return as_provider(ud).read_resource(context, text_or(uri, ""));
  });
}

inline toolhost_status_t provider_get_prompt(void* ud, const toolhost_call_t* raw, const char* name, const char* args,
                                             toolhost_writer_t* out) noexcept {
  return answer(out, [&] {
    call context(raw);
    return as_provider(ud).get_prompt(context, text_or(name, ""), text_or(args, "{}"));
  });
}

inline bool provider_complete(void* ud, const char* ref, const char* argument, const char* value, const char* context,
                              toolhost_writer_t* out) noexcept {
  try {
    auto completion =
        as_provider(ud).complete(text_or(ref, "{}"), text_or(argument, ""), text_or(value, ""), text_or(context, "{}"));
    if (!completion) return false;
    write(out, *completion);
    return true;
  } catch (...) {
    return false;
  }
}

inline void provider_instructions(void* ud, toolhost_writer_t* out) noexcept {
  try {
    write(out, as_provider(ud).instructions());
  } catch (...) {
  }
}

// The C description of `p`, which must outlive the registration.
inline toolhost_provider_desc_t provider_desc(provider& p, const provider_options& options) {
  toolhost_provider_desc_t d{};
  d.struct_size = sizeof d;
  d.user_data = &p;
  d.list_tools = &provider_list<&provider::list_tools>;
  d.call_tool = &provider_call_tool;
  d.list_resources = &provider_list<&provider::list_resources>;
  d.list_resource_templates = &provider_list<&provider::list_resource_templates>;
  d.read_resource = &provider_read_resource;
  d.list_prompts = &provider_list<&provider::list_prompts>;
  d.get_prompt = &provider_get_prompt;
  d.complete = &provider_complete;
  d.instructions = &provider_instructions;
  const auto wait = options.instructions_wait.count();
  d.instructions_wait_ms = wait <= 0 ? 0u : wait >= UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(wait);
  return d;
}

}  // namespace detail
}  // namespace toolhost::sdk
