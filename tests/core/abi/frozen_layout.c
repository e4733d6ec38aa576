/* The layout of every struct of the ABI, frozen: offsetof and sizeof of each field as published,
 * checked when this file is compiled as C11, C++17 and C++20 (tests/core/CMakeLists.txt) on an
 * LP64 target (Linux x86-64 and arm64).
 *
 * A struct may only grow at its end (plugin.h, "Growth"): an addition appends a FROZEN_OFFSET line
 * and raises the FROZEN_SIZE of its struct; no existing offset may ever change. A failure here
 * means a published field moved, which breaks every plugin built before. */
#include <stddef.h>

#include <toolhost/debug_target.h>
#include <toolhost/plugin.h>

#ifdef __cplusplus
#define FROZEN_ASSERT(condition, message) static_assert(condition, message)
#else
#define FROZEN_ASSERT(condition, message) _Static_assert(condition, message)
#endif
#define FROZEN_SIZE(type, size) FROZEN_ASSERT(sizeof(type) == (size), #type " changed its size")
#define FROZEN_OFFSET(type, field, offset) FROZEN_ASSERT(offsetof(type, field) == (offset), #type "." #field " moved")

#if defined(__LP64__)
FROZEN_SIZE(toolhost_writer_t, 16);
FROZEN_OFFSET(toolhost_writer_t, ctx, 0);
FROZEN_OFFSET(toolhost_writer_t, write, 8);

FROZEN_SIZE(toolhost_host_t, 56);
FROZEN_OFFSET(toolhost_host_t, abi_major, 0);
FROZEN_OFFSET(toolhost_host_t, abi_minor, 4);
FROZEN_OFFSET(toolhost_host_t, struct_size, 8);
FROZEN_OFFSET(toolhost_host_t, name, 16);
FROZEN_OFFSET(toolhost_host_t, version, 24);
FROZEN_OFFSET(toolhost_host_t, host_data, 32);
FROZEN_OFFSET(toolhost_host_t, get_service, 40);
FROZEN_OFFSET(toolhost_host_t, flags, 48);

FROZEN_SIZE(toolhost_plugin_entry_t, 56);
FROZEN_OFFSET(toolhost_plugin_entry_t, abi_major, 0);
FROZEN_OFFSET(toolhost_plugin_entry_t, abi_minor, 4);
FROZEN_OFFSET(toolhost_plugin_entry_t, struct_size, 8);
FROZEN_OFFSET(toolhost_plugin_entry_t, id, 16);
FROZEN_OFFSET(toolhost_plugin_entry_t, version, 24);
FROZEN_OFFSET(toolhost_plugin_entry_t, description, 32);
FROZEN_OFFSET(toolhost_plugin_entry_t, init, 40);
FROZEN_OFFSET(toolhost_plugin_entry_t, deinit, 48);

FROZEN_SIZE(toolhost_permission_kind_desc_t, 32);
FROZEN_OFFSET(toolhost_permission_kind_desc_t, struct_size, 0);
FROZEN_OFFSET(toolhost_permission_kind_desc_t, id, 8);
FROZEN_OFFSET(toolhost_permission_kind_desc_t, label, 16);
FROZEN_OFFSET(toolhost_permission_kind_desc_t, default_value, 24);

FROZEN_SIZE(toolhost_call_t, 96);
FROZEN_OFFSET(toolhost_call_t, struct_size, 0);
FROZEN_OFFSET(toolhost_call_t, host_data, 8);
FROZEN_OFFSET(toolhost_call_t, meta_json, 16);
FROZEN_OFFSET(toolhost_call_t, client_capabilities_json, 24);
FROZEN_OFFSET(toolhost_call_t, server_name, 32);
FROZEN_OFFSET(toolhost_call_t, protocol_version, 40);
FROZEN_OFFSET(toolhost_call_t, progress, 48);
FROZEN_OFFSET(toolhost_call_t, is_cancelled, 56);
FROZEN_OFFSET(toolhost_call_t, on_cancel, 64);
FROZEN_OFFSET(toolhost_call_t, log, 72);
FROZEN_OFFSET(toolhost_call_t, client_request, 80);
FROZEN_OFFSET(toolhost_call_t, confirm_whole_file, 88);

FROZEN_SIZE(toolhost_tool_desc_t, 88);
FROZEN_OFFSET(toolhost_tool_desc_t, struct_size, 0);
FROZEN_OFFSET(toolhost_tool_desc_t, name, 8);
FROZEN_OFFSET(toolhost_tool_desc_t, title, 16);
FROZEN_OFFSET(toolhost_tool_desc_t, description, 24);
FROZEN_OFFSET(toolhost_tool_desc_t, input_schema, 32);
FROZEN_OFFSET(toolhost_tool_desc_t, output_schema, 40);
FROZEN_OFFSET(toolhost_tool_desc_t, annotations, 48);
FROZEN_OFFSET(toolhost_tool_desc_t, permission_kind, 56);
FROZEN_OFFSET(toolhost_tool_desc_t, flags, 64);
FROZEN_OFFSET(toolhost_tool_desc_t, call, 72);
FROZEN_OFFSET(toolhost_tool_desc_t, user_data, 80);

FROZEN_SIZE(toolhost_resource_desc_t, 80);
FROZEN_OFFSET(toolhost_resource_desc_t, struct_size, 0);
FROZEN_OFFSET(toolhost_resource_desc_t, uri, 8);
FROZEN_OFFSET(toolhost_resource_desc_t, is_template, 16);
FROZEN_OFFSET(toolhost_resource_desc_t, name, 24);
FROZEN_OFFSET(toolhost_resource_desc_t, title, 32);
FROZEN_OFFSET(toolhost_resource_desc_t, description, 40);
FROZEN_OFFSET(toolhost_resource_desc_t, mime_type, 48);
FROZEN_OFFSET(toolhost_resource_desc_t, read, 56);
FROZEN_OFFSET(toolhost_resource_desc_t, complete, 64);
FROZEN_OFFSET(toolhost_resource_desc_t, user_data, 72);

FROZEN_SIZE(toolhost_prompt_desc_t, 64);
FROZEN_OFFSET(toolhost_prompt_desc_t, struct_size, 0);
FROZEN_OFFSET(toolhost_prompt_desc_t, name, 8);
FROZEN_OFFSET(toolhost_prompt_desc_t, title, 16);
FROZEN_OFFSET(toolhost_prompt_desc_t, description, 24);
FROZEN_OFFSET(toolhost_prompt_desc_t, arguments, 32);
FROZEN_OFFSET(toolhost_prompt_desc_t, get, 40);
FROZEN_OFFSET(toolhost_prompt_desc_t, complete, 48);
FROZEN_OFFSET(toolhost_prompt_desc_t, user_data, 56);

FROZEN_SIZE(toolhost_provider_desc_t, 96);
FROZEN_OFFSET(toolhost_provider_desc_t, struct_size, 0);
FROZEN_OFFSET(toolhost_provider_desc_t, user_data, 8);
FROZEN_OFFSET(toolhost_provider_desc_t, list_tools, 16);
FROZEN_OFFSET(toolhost_provider_desc_t, call_tool, 24);
FROZEN_OFFSET(toolhost_provider_desc_t, list_resources, 32);
FROZEN_OFFSET(toolhost_provider_desc_t, list_resource_templates, 40);
FROZEN_OFFSET(toolhost_provider_desc_t, read_resource, 48);
FROZEN_OFFSET(toolhost_provider_desc_t, list_prompts, 56);
FROZEN_OFFSET(toolhost_provider_desc_t, get_prompt, 64);
FROZEN_OFFSET(toolhost_provider_desc_t, complete, 72);
FROZEN_OFFSET(toolhost_provider_desc_t, instructions, 80);
FROZEN_OFFSET(toolhost_provider_desc_t, instructions_wait_ms, 88);

FROZEN_SIZE(toolhost_transport_desc_t, 32);
FROZEN_OFFSET(toolhost_transport_desc_t, struct_size, 0);
FROZEN_OFFSET(toolhost_transport_desc_t, kind, 8);
FROZEN_OFFSET(toolhost_transport_desc_t, name, 16);
FROZEN_OFFSET(toolhost_transport_desc_t, factory, 24);

FROZEN_SIZE(toolhost_registry_t, 72);
FROZEN_OFFSET(toolhost_registry_t, struct_size, 0);
FROZEN_OFFSET(toolhost_registry_t, register_permission_kind, 8);
FROZEN_OFFSET(toolhost_registry_t, register_tool, 16);
FROZEN_OFFSET(toolhost_registry_t, register_resource, 24);
FROZEN_OFFSET(toolhost_registry_t, register_prompt, 32);
FROZEN_OFFSET(toolhost_registry_t, register_provider, 40);
FROZEN_OFFSET(toolhost_registry_t, register_transport, 48);
FROZEN_OFFSET(toolhost_registry_t, add_instructions, 56);
FROZEN_OFFSET(toolhost_registry_t, declare_settings, 64);

FROZEN_SIZE(toolhost_log_t, 16);
FROZEN_OFFSET(toolhost_log_t, struct_size, 0);
FROZEN_OFFSET(toolhost_log_t, write, 8);

FROZEN_SIZE(toolhost_settings_t, 32);
FROZEN_OFFSET(toolhost_settings_t, struct_size, 0);
FROZEN_OFFSET(toolhost_settings_t, get, 8);
FROZEN_OFFSET(toolhost_settings_t, server_name, 16);
FROZEN_OFFSET(toolhost_settings_t, config_dir, 24);

FROZEN_SIZE(toolhost_notify_t, 32);
FROZEN_OFFSET(toolhost_notify_t, struct_size, 0);
FROZEN_OFFSET(toolhost_notify_t, list_changed, 8);
FROZEN_OFFSET(toolhost_notify_t, resource_updated, 16);
FROZEN_OFFSET(toolhost_notify_t, log, 24);

FROZEN_SIZE(toolhost_transports_t, 24);
FROZEN_OFFSET(toolhost_transports_t, struct_size, 0);
FROZEN_OFFSET(toolhost_transports_t, find, 8);
FROZEN_OFFSET(toolhost_transports_t, list, 16);

FROZEN_SIZE(toolhost_dt_stop_t, 296);
FROZEN_OFFSET(toolhost_dt_stop_t, struct_size, 0);
FROZEN_OFFSET(toolhost_dt_stop_t, reason, 4);
FROZEN_OFFSET(toolhost_dt_stop_t, thread, 8);
FROZEN_OFFSET(toolhost_dt_stop_t, pc, 16);
FROZEN_OFFSET(toolhost_dt_stop_t, code, 24);
FROZEN_OFFSET(toolhost_dt_stop_t, address, 32);
FROZEN_OFFSET(toolhost_dt_stop_t, description, 40);

FROZEN_SIZE(toolhost_debug_target_t, 184);
FROZEN_OFFSET(toolhost_debug_target_t, struct_size, 0);
FROZEN_OFFSET(toolhost_debug_target_t, impl, 8);
FROZEN_OFFSET(toolhost_debug_target_t, capabilities, 16);
FROZEN_OFFSET(toolhost_debug_target_t, close, 24);
FROZEN_OFFSET(toolhost_debug_target_t, describe, 32);
FROZEN_OFFSET(toolhost_debug_target_t, read_memory, 40);
FROZEN_OFFSET(toolhost_debug_target_t, write_memory, 48);
FROZEN_OFFSET(toolhost_debug_target_t, read_registers, 56);
FROZEN_OFFSET(toolhost_debug_target_t, write_register, 64);
FROZEN_OFFSET(toolhost_debug_target_t, set_breakpoint, 72);
FROZEN_OFFSET(toolhost_debug_target_t, clear_breakpoint, 80);
FROZEN_OFFSET(toolhost_debug_target_t, resume, 88);
FROZEN_OFFSET(toolhost_debug_target_t, interrupt, 96);
FROZEN_OFFSET(toolhost_debug_target_t, wait_stop, 104);
FROZEN_OFFSET(toolhost_debug_target_t, is_running, 112);
FROZEN_OFFSET(toolhost_debug_target_t, list_threads, 120);
FROZEN_OFFSET(toolhost_debug_target_t, select_thread, 128);
FROZEN_OFFSET(toolhost_debug_target_t, list_modules, 136);
FROZEN_OFFSET(toolhost_debug_target_t, read_output, 144);
FROZEN_OFFSET(toolhost_debug_target_t, extension, 152);
FROZEN_OFFSET(toolhost_debug_target_t, resume_with_signal, 160);
FROZEN_OFFSET(toolhost_debug_target_t, pass_signals, 168);
FROZEN_OFFSET(toolhost_debug_target_t, read_siginfo, 176);

FROZEN_SIZE(toolhost_debug_target_factory_t, 56);
FROZEN_OFFSET(toolhost_debug_target_factory_t, struct_size, 0);
FROZEN_OFFSET(toolhost_debug_target_factory_t, version, 4);
FROZEN_OFFSET(toolhost_debug_target_factory_t, name, 8);
FROZEN_OFFSET(toolhost_debug_target_factory_t, description, 16);
FROZEN_OFFSET(toolhost_debug_target_factory_t, default_connect, 24);
FROZEN_OFFSET(toolhost_debug_target_factory_t, connect_help, 32);
FROZEN_OFFSET(toolhost_debug_target_factory_t, open, 40);
FROZEN_OFFSET(toolhost_debug_target_factory_t, minor, 48);
#else
#error "the frozen layout is written for LP64 targets"
#endif

int toolhost_layout_frozen(void) { return 0; }
