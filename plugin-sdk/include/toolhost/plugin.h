/* SPDX-License-Identifier: Apache-2.0 */
/* toolhost plugin ABI, version 1.1.
 *
 * A toolhost plugin is a shared library that exports exactly one data symbol,
 * `toolhost_plugin_entry`, of type `toolhost_plugin_entry_t`. Everything else is reached
 * through tables of function pointers that the host hands over and that are looked up by a
 * versioned id ("toolhost.registry/1").
 *
 * Rules that hold for every declaration below:
 * - Pure C. Only fixed-width integers, `size_t`, `double`, `bool`, pointers and UTF-8 strings
 *   cross the boundary. JSON crosses as UTF-8 text.
 * - Strings passed to a function are borrowed for the duration of the call unless the comment
 *   says otherwise; the callee copies what it keeps. `const char*` strings are NUL-terminated.
 * - Output goes into a `toolhost_writer_t` provided by the caller, so no allocation ever has to
 *   be freed on the other side.
 * - No exception and no longjmp may cross the boundary in either direction (the host's crash
 *   guard, below, is the one exception it makes for itself).
 * - Every struct below carries `struct_size`: first, or after the two version numbers in the
 *   entry and the host (toolhost_writer_t alone is frozen as it is); see "Growth" for how it is
 *   read. Zero a struct (`= {0}`, `{}`, memset) before filling it. tests/core/abi/frozen_layout.c
 *   freezes every published offset.
 * - Thread tags: [init] only during `init`, on the thread that called it; [any-thread] from any
 *   thread, concurrently; [call] only while the call that handed you the pointer is running, from
 *   any thread.
 *
 * Growth. Structs grow only by appending fields. Whoever fills a struct sets `struct_size` to
 * the sizeof it compiled against, and whoever reads one honours it on every read:
 * - a field beyond `struct_size` reads as zero (NULL, false): its documented default
 *   (TOOLHOST_HAS_FIELD tells whether a struct holds a field);
 * - in a registration (a permission kind, tool, resource, prompt or transport: a request the
 *   host acts on) and in the entry, bytes beyond the fields the host knows are ignored when all
 *   of them are zero (the plugin was built against a newer header but uses nothing new) and
 *   refused otherwise, with a sentence naming the struct: the host cannot honour what it does
 *   not know;
 * - in a table of functions one side offers the other (a provider, a service, a debug-target
 *   factory or session), what the reader does not know it ignores: it never calls it;
 * - a struct the caller hands out to be filled (toolhost_dt_stop_t) is written only up to its
 *   `struct_size`, which the callee then sets to the number of bytes it wrote.
 * Why not CLAP's rule (frozen structs, a new versioned id for every addition)? Every struct here
 * carries its size from the first version, the host checks each registration anyway, and a new
 * optional field then costs a plugin nothing on an older host, where a new id would need a
 * second registration path. A plugin checks TOOLHOST_HAS_FIELD before calling a function
 * appended to a service table; an incompatible change gets a new id ("toolhost.registry/2").
 *
 * Versions. The major must match the host's. Minors count the additions made under the growth
 * rule:
 *   1.0  the first published ABI;
 *   1.1  declare_settings appended to toolhost.registry/1.
 * The entry's `abi_minor` is the minor the plugin *needs*, not the one it was built with: the
 * host refuses a plugin that needs a newer minor than its own, and loads one built against a
 * newer header that needs nothing newer (its unused new fields are zero). A plugin that checks
 * TOOLHOST_HAS_FIELD before it calls an appended function needs nothing newer for it. The C++
 * SDK declares 0 unless the plugin defines TOOLHOST_PLUGIN_ABI_MINOR.
 *
 * Lifecycle and threads.
 * - The host loads a plugin once and never unloads it while the process lives.
 * - `init` runs once for every server that serves the plugin (two servers: two instances). No
 *   two `init` calls ever run at the same time, even for different servers: the host runs one
 *   at a time, process-wide, each on the loading thread of its server. The plugins of one server
 *   start in the order of its `plugins` list, and no call into an instance starts before its
 *   `init` returned.
 * - `deinit` runs at most once per instance that started, on any thread, after every call into
 *   that instance has returned and with none to follow; the deinits of a server run in reverse
 *   start order. A process that ends while calls still run ends without deinit, so do not leave
 *   anything that must happen (flushing a file) to it.
 * - Crash guard: `init` runs under a guard. A SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT raised
 *   on the init thread while `init` runs makes the host siglongjmp out of it, through the
 *   plugin's frames: no destructor or cleanup of the plugin runs, locks it took stay taken,
 *   memory it allocated is lost, threads it started keep running. The host then reports
 *   "init crashed", withdraws what the instance registered and never calls into it again (no
 *   deinit). A fault on another thread, or after `init`, ends the process.
 * - Dependencies: a plugin written against this header alone needs only the C library. The C++
 *   SDK (toolhost/sdk/) needs Abseil from the toolhost executable: see toolhost/sdk/plugin.hpp.
 */
#ifndef TOOLHOST_PLUGIN_H
#define TOOLHOST_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TOOLHOST_ABI_MAJOR 1
#define TOOLHOST_ABI_MINOR 1

/* The name of the one symbol a plugin exports. */
#define TOOLHOST_ENTRY_SYMBOL "toolhost_plugin_entry"

/* True when the struct `*ptr` (which starts with `struct_size`) is long enough to hold `field`
 * of `type`. */
#define TOOLHOST_HAS_FIELD(ptr, type, field)                                                       \
   ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

#if defined(_WIN32)
#define TOOLHOST_EXPORT __declspec(dllexport)
#else
#define TOOLHOST_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Status codes ---------------------------------------------------------------------- */

typedef int32_t toolhost_status_t;
#define TOOLHOST_OK 0
#define TOOLHOST_ERR_INVALID_ARGUMENT 1 /* a name, schema or argument is malformed */
#define TOOLHOST_ERR_ALREADY_EXISTS 2   /* a duplicate name inside one server */
#define TOOLHOST_ERR_NOT_FOUND 3        /* an unknown id, transport or request */
#define TOOLHOST_ERR_WRONG_STATE 4      /* e.g. registration outside init */
#define TOOLHOST_ERR_UNSUPPORTED 5      /* the client lacks the capability asked for */
#define TOOLHOST_ERR_CANCELLED 6        /* the call was cancelled while waiting */
#define TOOLHOST_ERR_TIMEOUT 7
#define TOOLHOST_ERR_REMOTE 8 /* the client answered with a JSON-RPC error */
#define TOOLHOST_ERR_INTERNAL 9

/* ---- Writers --------------------------------------------------------------------------- */

/* A sink for bytes owned by whoever hands it out. `write` appends; it may be called any number
 * of times. Valid only for the duration of the call that received it. */
typedef struct toolhost_writer {
   void *ctx;
   void (*write)(void *ctx, const char *data, size_t size);
} toolhost_writer_t;

/* ---- Log levels (the MCP / RFC 5424 levels, in increasing severity) -------------------- */

typedef int32_t toolhost_log_level_t;
#define TOOLHOST_LOG_DEBUG 0
#define TOOLHOST_LOG_INFO 1
#define TOOLHOST_LOG_NOTICE 2
#define TOOLHOST_LOG_WARNING 3
#define TOOLHOST_LOG_ERROR 4
#define TOOLHOST_LOG_CRITICAL 5
#define TOOLHOST_LOG_ALERT 6
#define TOOLHOST_LOG_EMERGENCY 7

/* ---- The host ---------------------------------------------------------------------------- */

/* The instance only lists: `toolhost plugins` starts plugins to show what they register and
 * calls nothing afterwards. Check the settings there are (a listing of every plugin has none: do
 * not fail for that) and register everything as usual, but start nothing that outlives init: no
 * process, connection or thread. */
#define TOOLHOST_HOST_LISTING (1u << 0)

/* The instance is being checked (`toolhost check-config`) and serves nothing. Start what proves
 * the settings work (an upstream process, a connection) and fail init with the reason when it
 * cannot, but download and install nothing; stop what you started before init returns. A host
 * older than this flag never sets it. */
#define TOOLHOST_HOST_CHECKING (1u << 1)

/* What the host tells one instance about itself. Owned by the host; valid until `deinit`
 * returns (for an instance whose init failed, until init returns). */
typedef struct toolhost_host {
   uint32_t abi_major;
   uint32_t abi_minor; /* the host's; a plugin may use additions up to it */
   uint32_t struct_size;
   const char *name;    /* "toolhost" */
   const char *version; /* the host's version, e.g. "0.1.0" */
   void *host_data;     /* reserved for the host; do not touch */

   /* Returns the service table with the given versioned id, or NULL when the host does not
    * offer it. The table is owned by the host and stays valid until `deinit` returns.
    * [any-thread] */
   const void *(*get_service)(const struct toolhost_host *host, const char *id);

   uint32_t flags; /* TOOLHOST_HOST_* */
} toolhost_host_t;

/* ---- The entry symbol -------------------------------------------------------------------- */

/* The host refuses an entry that breaks a rule below with load status "bad entry" and the
 * sentence "<file> has a malformed toolhost_plugin_entry (<what>); ...", naming the field. */
typedef struct toolhost_plugin_entry {
   uint32_t abi_major;   /* TOOLHOST_ABI_MAJOR the plugin was built with; must equal the host's */
   uint32_t abi_minor;   /* the minor the plugin needs (see "Versions"); must be <= the host's */
   uint32_t struct_size; /* sizeof(toolhost_plugin_entry_t) */
   const char *id;       /* 1 to 64 of [A-Za-z0-9_.-]; what `plugins = [...]` in the config names */
   const char *version;  /* the plugin's own version, free form; may be NULL */
   const char *description; /* may be NULL */

   /* Called once for every server that serves this plugin (see "Lifecycle and threads"), before
    * any other call for that server; `host` is specific to that server and stays valid until
    * `deinit(instance)`. Registers tools, resources, prompts, permission kinds and transports
    * through the "toolhost.registry/1" service; registration is refused after `init` returns.
    * Must be quick and must not talk to the user or start long work: start that lazily, or on a
    * thread of the plugin's own (not in listing mode: TOOLHOST_HOST_LISTING).
    * On success stores an opaque pointer in `*instance` (may be NULL) and returns true. On
    * failure writes one sentence saying why into `error` and returns false; the host then
    * withdraws everything this call registered and never calls `deinit` for it. Required.
    * [init] */
   bool (*init)(const toolhost_host_t *host, void **instance, toolhost_writer_t *error);

   /* Undoes `init` for one server. No call into the plugin for that server is running or will
    * start. May be NULL. Any thread, at most once (see "Lifecycle and threads"). */
   void (*deinit)(void *instance);
} toolhost_plugin_entry_t;

/* The entry every plugin defines, exactly once, with TOOLHOST_EXPORT. Declared here so that a C++
 * definition (`const` at namespace scope, which would otherwise be internal) has C linkage and is
 * exported: `const toolhost_plugin_entry_t toolhost_plugin_entry = {...};`. */
TOOLHOST_EXPORT extern const toolhost_plugin_entry_t toolhost_plugin_entry;

/* ---- Permission kinds -------------------------------------------------------------------- */

typedef int32_t toolhost_permission_t;
#define TOOLHOST_PERMISSION_ALLOW 0
#define TOOLHOST_PERMISSION_ASK 1
#define TOOLHOST_PERMISSION_NEVER 2

typedef struct toolhost_permission_kind_desc {
   uint32_t struct_size;
   const char *id;    /* e.g. "rename": the key under [permissions] in the config */
   const char *label; /* the row a person reads, e.g. "Rename functions and variables" */
   toolhost_permission_t default_value;
} toolhost_permission_kind_desc_t;

/* ---- The per-call context ---------------------------------------------------------------- */

typedef struct toolhost_call toolhost_call_t;

/* Called by the host when the call is cancelled; see `on_cancel`. [any-thread] */
typedef void (*toolhost_cancel_fn)(void *user_data);

struct toolhost_call {
   uint32_t struct_size;
   void *host_data; /* the host's; do not touch */

   /* The request's `_meta` object as JSON text ("{}" when absent; without the request context of
    * MCP 2026-07-28, io.modelcontextprotocol/protocolVersion, clientCapabilities and logLevel,
    * which are the fields below and the host's log level), the client's declared
    * capabilities as JSON, the server name, and the negotiated protocol version. Borrowed;
    * valid for the whole call. */
   const char *meta_json;
   const char *client_capabilities_json;
   const char *server_name;
   const char *protocol_version;

   /* Reports progress if the client asked for it (a progressToken in `_meta`); otherwise does
    * nothing. `progress` must grow from one report to the next (the host drops reports that do
    * not); `total` < 0 means unknown; `message` may be NULL. [call] */
   void (*progress)(const toolhost_call_t *call,
                    double progress,
                    double total,
                    const char *message);

   /* True once the client has cancelled the call (or the host is shutting down). A cancelled
    * call should return soon; whatever it writes is discarded. [call] */
   bool (*is_cancelled)(const toolhost_call_t *call);

   /* Registers a function the host calls once when the call is cancelled, from another thread;
    * called at once if the call is already cancelled. Replaces an earlier registration; pass
    * NULL to remove it before `user_data` dies. [call] */
   void (*on_cancel)(const toolhost_call_t *call, toolhost_cancel_fn fn, void *user_data);

   /* Sends a log message to the client (notifications/message) if `level` is at or above the
    * level the client set. `logger` may be NULL; `data_json` is any JSON value (a string is
    * "\"text\""). [call] */
   void (*log)(const toolhost_call_t *call,
               toolhost_log_level_t level,
               const char *logger,
               const char *data_json);

   /* Sends a request to the client ("elicitation/create", "sampling/createMessage",
    * "roots/list") and blocks until it answers, the call is cancelled or `timeout_ms` passes
    * (0 means no limit). On TOOLHOST_OK writes the JSON result into `out`; on
    * TOOLHOST_ERR_REMOTE writes the JSON-RPC error object into `out`; returns
    * TOOLHOST_ERR_UNSUPPORTED without sending anything when the client did not declare the
    * matching capability. [call] */
   toolhost_status_t (*client_request)(const toolhost_call_t *call,
                                       const char *method,
                                       const char *params_json,
                                       uint32_t timeout_ms,
                                       toolhost_writer_t *out);

   /* The privacy filter "ask before sending a whole file": call it before a tool sends the
    * whole of a file to the client. Returns true when the tool may go on: the server does not
    * ask, or the person accepted. Returns false when the person declined or could not be
    * asked; the tool should then answer with an error that says so. `what` names the file.
    * [call] */
   bool (*confirm_whole_file)(const toolhost_call_t *call, const char *what);
};

/* ---- Tools ------------------------------------------------------------------------------- */

/* Calls to the tool may run at the same time as other calls to it. Without this flag the host
 * runs one call of the tool at a time. */
#define TOOLHOST_TOOL_CONCURRENT (1u << 0)
/* The tool only files a suggestion that a person approves later: it never asks first. */
#define TOOLHOST_TOOL_SUGGESTION (1u << 1)
/* The tool edits the project; while the server's review setting is on its edits become
 * suggestions, so it never asks first then. */
#define TOOLHOST_TOOL_REVIEWABLE (1u << 2)
/* A call of the tool may take long (minutes): a client that supports tasks (MCP 2026-07-28's
 * io.modelcontextprotocol/tasks extension, 2025-11-25's experimental tasks) may get a task
 * handle at once and poll for the result. Nothing changes for the plugin: progress, cancellation
 * and questions to the person work as in any call. */
#define TOOLHOST_TOOL_TASKS (1u << 3)
/* With TOOLHOST_TOOL_TASKS: the tool runs only as a task; a client that does not support tasks
 * is refused (MCP error -32021 in 2026-07-28). */
#define TOOLHOST_TOOL_TASKS_REQUIRED (1u << 4)

/* Runs one tool call. `arguments_json` is the `arguments` object (at least "{}"), already
 * checked by the SDK if the plugin uses it. Writes one MCP CallToolResult object as JSON into
 * `result`: {"content":[...], "structuredContent":{...}, "isError":bool}. Writing nothing, or
 * something that is not such an object, becomes a tool error. [any-thread] */
typedef void (*toolhost_tool_call_fn)(void *user_data,
                                      const toolhost_call_t *call,
                                      const char *arguments_json,
                                      size_t arguments_size,
                                      toolhost_writer_t *result);

typedef struct toolhost_tool_desc {
   uint32_t struct_size;
   const char *name;            /* 1-64 characters of [A-Za-z0-9_.-], unique within a server */
   const char *title;           /* may be NULL */
   const char *description;     /* may be NULL */
   const char *input_schema;    /* JSON Schema object as text; NULL means no arguments */
   const char *output_schema;   /* JSON Schema object as text, or NULL */
   const char *annotations;     /* MCP ToolAnnotations object as text, or NULL */
   const char *permission_kind; /* id of a registered permission kind; NULL means "run" */
   uint32_t flags;              /* TOOLHOST_TOOL_* */
   toolhost_tool_call_fn call;
   void *user_data; /* handed to `call`; owned by the plugin, must live until deinit */
} toolhost_tool_desc_t;

/* ---- Resources and prompts ----------------------------------------------------------------- */

/* Reads a resource. Writes an MCP ReadResourceResult ({"contents":[...]}) into `result`.
 * Returns TOOLHOST_ERR_NOT_FOUND for a URI it does not know. [any-thread] */
typedef toolhost_status_t (*toolhost_resource_read_fn)(void *user_data,
                                                       const toolhost_call_t *call,
                                                       const char *uri,
                                                       toolhost_writer_t *result);

/* Completes an argument value: writes an MCP completion object ({"values":[...],
 * "total":N, "hasMore":bool}) into `result`. `context_json` is the request's
 * context.arguments object, "{}" when absent. [any-thread] */
typedef void (*toolhost_complete_fn)(void *user_data,
                                     const char *argument_name,
                                     const char *value,
                                     const char *context_json,
                                     toolhost_writer_t *result);

typedef struct toolhost_resource_desc {
   uint32_t struct_size;
   const char *uri;  /* a fixed URI, or an RFC 6570 template if `is_template` */
   bool is_template; /* `uri` has {variables}; `read` gets the expanded URI */
   const char *name;
   const char *title;       /* may be NULL */
   const char *description; /* may be NULL */
   const char *mime_type;   /* may be NULL */
   toolhost_resource_read_fn read;
   toolhost_complete_fn complete; /* for templates' variables; may be NULL */
   void *user_data;
} toolhost_resource_desc_t;

/* Renders a prompt: writes an MCP GetPromptResult ({"messages":[...]}) into `result`.
 * Returns TOOLHOST_ERR_INVALID_ARGUMENT (after writing a sentence into `result`) when a
 * required argument is missing. [any-thread] */
typedef toolhost_status_t (*toolhost_prompt_get_fn)(void *user_data,
                                                    const toolhost_call_t *call,
                                                    const char *arguments_json,
                                                    toolhost_writer_t *result);

typedef struct toolhost_prompt_desc {
   uint32_t struct_size;
   const char *name;
   const char *title;       /* may be NULL */
   const char *description; /* may be NULL */
   const char *arguments;   /* JSON array of MCP PromptArgument objects, or NULL */
   toolhost_prompt_get_fn get;
   toolhost_complete_fn complete; /* may be NULL */
   void *user_data;
} toolhost_prompt_desc_t;

/* ---- Providers: tools, resources and prompts that change at run time ----------------------- */

/* A provider serves items the plugin learns only while running (a proxy re-exposing another
 * server). The host asks it on every list and routes names it does not know statically to it.
 * Call `notify_list_changed` (toolhost.notify/1) whenever the set changes. Every callback is
 * [any-thread] and may be NULL when the provider offers nothing of that kind. */
typedef struct toolhost_provider_desc {
   uint32_t struct_size;
   void *user_data;

   /* Writes a JSON array of MCP Tool objects. Each may carry "x-toolhost-permission": the id
    * of the permission kind the call is matched to (default "run"). */
   void (*list_tools)(void *user_data, toolhost_writer_t *out);
   /* Same contract as toolhost_tool_call_fn, with the tool's name. Returns false when the
    * provider does not know `name` (nothing written). The host also offers names that no one
    * listed (a tool the provider hides on purpose), without a permission check: answer those
    * only with a tool error that says what to use instead, or return false. */
   bool (*call_tool)(void *user_data,
                     const toolhost_call_t *call,
                     const char *name,
                     const char *arguments_json,
                     size_t arguments_size,
                     toolhost_writer_t *result);

   /* Writes a JSON array of MCP Resource objects / ResourceTemplate objects. */
   void (*list_resources)(void *user_data, toolhost_writer_t *out);
   void (*list_resource_templates)(void *user_data, toolhost_writer_t *out);
   toolhost_resource_read_fn read_resource;

   /* Writes a JSON array of MCP Prompt objects; renders one by name. */
   void (*list_prompts)(void *user_data, toolhost_writer_t *out);
   toolhost_status_t (*get_prompt)(void *user_data,
                                   const toolhost_call_t *call,
                                   const char *name,
                                   const char *arguments_json,
                                   toolhost_writer_t *result);

   /* Answers completion/complete for a reference the host does not know: `ref_json` is the
    * request's `ref` object. Returns false when it does not know the reference either. */
   bool (*complete)(void *user_data,
                    const char *ref_json,
                    const char *argument_name,
                    const char *value,
                    const char *context_json,
                    toolhost_writer_t *result);

   /* Writes server instructions to add to the initialize reply (may write nothing). Called
    * when a client initializes; must not block: write what is known now. */
   void (*instructions)(void *user_data, toolhost_writer_t *out);

   /* Instructions that take time (an upstream server still starting): the longest a client's
    * initialize may wait for them, in milliseconds; 0, never wait. Until the provider announces
    * them with `list_changed(host, TOOLHOST_LIST_INSTRUCTIONS)` (toolhost.notify/1), which it
    * must do once they are known or known to be absent, an initialize waits up to this long
    * before it calls `instructions`; afterwards it never waits. MCP cannot update the
    * instructions of a client that already initialized. */
   uint32_t instructions_wait_ms;
} toolhost_provider_desc_t;

/* ---- Transports -------------------------------------------------------------------------- */

/* A transport is something one plugin offers other plugins: a debug-target backend (kind
 * "debug-target", see debug_target.h), for example. `factory` points at a kind-specific table
 * owned by the registering plugin and valid until its deinit. */
typedef struct toolhost_transport_desc {
   uint32_t struct_size;
   const char *kind; /* e.g. "debug-target" */
   const char *name; /* e.g. "gdb"; unique per kind within a server */
   const void *factory;
} toolhost_transport_desc_t;

/* ---- Service: toolhost.registry/1 ---------------------------------------------------------- */

#define TOOLHOST_REGISTRY_ID "toolhost.registry/1"

/* Every function is [init]: after `init` returns they fail with TOOLHOST_ERR_WRONG_STATE.
 * On failure they write one sentence naming the problem into `error` (may be NULL). The host
 * copies what it needs from the descriptors; the strings need not outlive the call, but
 * `user_data` and the function pointers must stay valid until deinit. */
typedef struct toolhost_registry {
   uint32_t struct_size;
   /* A permission kind with the same id and label as one already registered in this server is
    * shared; the same id with another label is refused. */
   toolhost_status_t (*register_permission_kind)(const toolhost_host_t *host,
                                                 const toolhost_permission_kind_desc_t *desc,
                                                 toolhost_writer_t *error);
   toolhost_status_t (*register_tool)(const toolhost_host_t *host,
                                      const toolhost_tool_desc_t *desc,
                                      toolhost_writer_t *error);
   toolhost_status_t (*register_resource)(const toolhost_host_t *host,
                                          const toolhost_resource_desc_t *desc,
                                          toolhost_writer_t *error);
   toolhost_status_t (*register_prompt)(const toolhost_host_t *host,
                                        const toolhost_prompt_desc_t *desc,
                                        toolhost_writer_t *error);
   toolhost_status_t (*register_provider)(const toolhost_host_t *host,
                                          const toolhost_provider_desc_t *desc,
                                          toolhost_writer_t *error);
   toolhost_status_t (*register_transport)(const toolhost_host_t *host,
                                           const toolhost_transport_desc_t *desc,
                                           toolhost_writer_t *error);
   /* Text added to the server's `instructions` in the initialize reply. */
   toolhost_status_t (*add_instructions)(const toolhost_host_t *host, const char *text);

   /* 1.1. Declares the settings the plugin takes (its [servers.NAME.settings.ID] table) as a JSON
    * Schema object, e.g. {"type":"object","properties":{"timeout_ms":{"type":"integer",
    * "minimum":100,"description":"..."}}}, and has the host check this instance's settings (from
    * the config file and from --set) against it at once. The host reads type, enum, minimum,
    * maximum, required, properties, items and additionalProperties, which here defaults to false:
    * a key the schema does not name is refused, so that a misspelt setting is an error rather
    * than ignored. Returns TOOLHOST_OK when the settings fit. Otherwise returns
    * TOOLHOST_ERR_INVALID_ARGUMENT after writing one sentence that starts with where the value
    * was written ("FILE:LINE:COLUMN: servers.S.settings.ID.KEY: ..." or "--set ID.KEY=VALUE:
    * ..."), and the instance fails to start with that sentence whatever init returns; the same
    * for a schema that is not a JSON object. Call it first in init, before reading the settings,
    * at most once. In listing mode (TOOLHOST_HOST_LISTING) an empty table passes, whatever the
    * schema requires. An older host lacks this field (check TOOLHOST_HAS_FIELD on the registry)
    * and checks nothing. [init] */
   toolhost_status_t (*declare_settings)(const toolhost_host_t *host,
                                         const char *schema_json,
                                         toolhost_writer_t *error);
} toolhost_registry_t;

/* ---- Service: toolhost.log/1 ---------------------------------------------------------------- */

#define TOOLHOST_LOG_ID "toolhost.log/1"

/* Writes to the host's log (stderr), prefixed with the plugin id. Never reaches stdout.
 * [any-thread] */
typedef struct toolhost_log {
   uint32_t struct_size;
   void (*write)(const toolhost_host_t *host, toolhost_log_level_t level, const char *message);
} toolhost_log_t;

/* ---- Service: toolhost.settings/1 ----------------------------------------------------------- */

#define TOOLHOST_SETTINGS_ID "toolhost.settings/1"

/* The plugin's settings table from the config ([servers.NAME.settings.PLUGIN]). [any-thread] */
typedef struct toolhost_settings {
   uint32_t struct_size;
   /* Writes the table as a JSON object ("{}" when the config has none). */
   void (*get)(const toolhost_host_t *host, toolhost_writer_t *out);
   /* The name of the server this instance belongs to. Borrowed; valid until deinit. */
   const char *(*server_name)(const toolhost_host_t *host);
   /* The directory of the config file, for resolving relative paths in settings. */
   const char *(*config_dir)(const toolhost_host_t *host);
} toolhost_settings_t;

/* ---- Service: toolhost.notify/1 ------------------------------------------------------------- */

#define TOOLHOST_NOTIFY_ID "toolhost.notify/1"

#define TOOLHOST_LIST_TOOLS 1u
#define TOOLHOST_LIST_RESOURCES 2u
#define TOOLHOST_LIST_PROMPTS 4u
/* A provider's late instructions are known (no message goes out; see instructions_wait_ms). */
#define TOOLHOST_LIST_INSTRUCTIONS 8u

/* Tells connected clients that something changed. [any-thread], after init returned. */
typedef struct toolhost_notify {
   uint32_t struct_size;
   /* `lists` is a mask of TOOLHOST_LIST_*: sends notifications/{tools,resources,prompts}/
    * list_changed to every session of the server. */
   void (*list_changed)(const toolhost_host_t *host, uint32_t lists);
   /* Sends notifications/resources/updated to the sessions subscribed to `uri`. */
   void (*resource_updated)(const toolhost_host_t *host, const char *uri);
   /* Sends notifications/message to every session whose level admits it. */
   void (*log)(const toolhost_host_t *host,
               toolhost_log_level_t level,
               const char *logger,
               const char *data_json);
} toolhost_notify_t;

/* ---- Service: toolhost.transports/1 --------------------------------------------------------- */

#define TOOLHOST_TRANSPORTS_ID "toolhost.transports/1"

/* Finds transports other plugins of the same server registered. Usable from the end of the
 * last plugin's init onwards (all plugins have registered by then). [any-thread] */
typedef struct toolhost_transports {
   uint32_t struct_size;
   /* Returns the factory registered as (kind, name), or NULL. */
   const void *(*find)(const toolhost_host_t *host, const char *kind, const char *name);
   /* Writes a JSON array of the names registered for `kind`. */
   void (*list)(const toolhost_host_t *host, const char *kind, toolhost_writer_t *out);
} toolhost_transports_t;

#ifdef __cplusplus
}
#endif

#endif /* TOOLHOST_PLUGIN_H */
