/* SPDX-License-Identifier: Apache-2.0 */
/* toolhost debug-target transport interface, "toolhost.debug-target/1".
 *
 * A backend plugin (kd, kdnet, gdb, memory, dump) registers one transport of kind
 * TOOLHOST_DEBUG_TARGET_KIND whose `factory` points at a `toolhost_debug_target_factory_t`.
 * The debugger plugin finds it through "toolhost.transports/1", opens a session with it and
 * owns everything a person types; the backend knows only its wire. C++ backends implement
 * toolhost::sdk::debug_target (toolhost/sdk/debug_target.hpp) and get every function below as a
 * noexcept trampoline.
 *
 * Conventions are those of plugin.h (pure C, writers for output, no exceptions, the growth rule).
 * Threading: the debugger calls a session from one thread at a time, except `interrupt` and
 * `read_output`, which may be called from another thread while `wait_stop` blocks. A backend
 * that runs a background pump (KD while the target runs) keeps it private and buffers target
 * output for `read_output`.
 *
 * Versions. The major is part of the kind, as in service ids: an incompatible interface would be
 * "toolhost.debug-target/2", and a backend may register both. Minors grow the structs below by
 * appending, and each addition increments TOOLHOST_DEBUG_TARGET_MINOR:
 *   1.0  the factory, the session table and the stop as first published;
 *   1.1  `minor` appended to the factory; resume_with_signal, pass_signals and read_siginfo
 *        appended to the session; TOOLHOST_DT_STOP_TERMINATED.
 * The debugger accepts every minor of its major: it reads a field of a factory or session only
 * when that struct's `struct_size` covers it (TOOLHOST_HAS_FIELD), and treats a function an older
 * backend lacks as TOOLHOST_ERR_UNSUPPORTED. A backend built for a newer minor than the debugger
 * knows works too: the debugger never looks past the fields it knows.
 */
#ifndef TOOLHOST_DEBUG_TARGET_H
#define TOOLHOST_DEBUG_TARGET_H

#include <toolhost/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TOOLHOST_DEBUG_TARGET_KIND "toolhost.debug-target/1"
#define TOOLHOST_DEBUG_TARGET_MAJOR 1
#define TOOLHOST_DEBUG_TARGET_MINOR 1

/* ---- Capabilities (a mask; the debugger checks them and explains what a backend lacks) -------- */

#define TOOLHOST_DT_CAP_READ_VIRTUAL (1ull << 0) /* memory by virtual address, current space */
#define TOOLHOST_DT_CAP_WRITE_VIRTUAL (1ull << 1)
#define TOOLHOST_DT_CAP_READ_PHYSICAL (1ull << 2) /* memory by physical address */
#define TOOLHOST_DT_CAP_WRITE_PHYSICAL (1ull << 3)
#define TOOLHOST_DT_CAP_REGISTERS (1ull << 4)
#define TOOLHOST_DT_CAP_WRITE_REGISTERS (1ull << 5)
#define TOOLHOST_DT_CAP_SW_BREAKPOINTS (1ull << 6)
#define TOOLHOST_DT_CAP_HW_BREAKPOINTS (1ull << 7) /* execution breakpoints in debug registers */
#define TOOLHOST_DT_CAP_WATCHPOINTS (1ull << 8)    /* data breakpoints: read / write / access */
#define TOOLHOST_DT_CAP_RUN_CONTROL (1ull << 9)    /* resume, step, interrupt, wait_stop */
#define TOOLHOST_DT_CAP_THREADS (1ull << 10)       /* more than one thread or vCPU */
#define TOOLHOST_DT_CAP_OUTPUT (1ull << 11)        /* target output (DbgPrint, O packets) */
#define TOOLHOST_DT_CAP_MODULES (1ull << 12)       /* a module / library list */
#define TOOLHOST_DT_CAP_REBOOT (1ull << 13)        /* the target can reboot under us (KD) */

/* ---- Values ---------------------------------------------------------------------------------- */

typedef int32_t toolhost_dt_space_t;
#define TOOLHOST_DT_VIRTUAL 0
#define TOOLHOST_DT_PHYSICAL 1

typedef int32_t toolhost_dt_breakpoint_type_t;
#define TOOLHOST_DT_BP_SOFTWARE 0
#define TOOLHOST_DT_BP_HARDWARE 1 /* execution, in a debug register */
#define TOOLHOST_DT_BP_WRITE 2
#define TOOLHOST_DT_BP_READ 3
#define TOOLHOST_DT_BP_ACCESS 4

typedef int32_t toolhost_dt_resume_t;
#define TOOLHOST_DT_CONTINUE 0
#define TOOLHOST_DT_STEP 1 /* one instruction on the selected thread / vCPU */

typedef int32_t toolhost_dt_stop_reason_t;
#define TOOLHOST_DT_STOP_UNKNOWN 0
#define TOOLHOST_DT_STOP_BREAKPOINT 1
#define TOOLHOST_DT_STOP_STEP 2
#define TOOLHOST_DT_STOP_WATCHPOINT 3
#define TOOLHOST_DT_STOP_INTERRUPT 4 /* after `interrupt` (break-in) */
#define TOOLHOST_DT_STOP_SIGNAL 5    /* a POSIX signal; `code` is its number */
#define TOOLHOST_DT_STOP_EXCEPTION 6 /* a Windows exception; `code` is the NTSTATUS */
#define TOOLHOST_DT_STOP_BUGCHECK 7  /* `code` is the bugcheck code */
#define TOOLHOST_DT_STOP_EXITED 8    /* the process exited; `code` is its status */
#define TOOLHOST_DT_STOP_REBOOT 9    /* the target rebooted; state must be rediscovered */
#define TOOLHOST_DT_STOP_MODULE_LOAD 10
#define TOOLHOST_DT_STOP_TERMINATED 11 /* the process was ended by a signal; `code` is its number */

/* Filled by `wait_stop` into a struct the caller owns. The caller zeroes it and sets `struct_size`
 * to the sizeof it compiled against (0 stands for the 1.0 layout, this one); the backend writes at
 * most that many bytes and sets `struct_size` to the number it wrote, so each side reads only the
 * fields both know. */
typedef struct toolhost_dt_stop {
   uint32_t struct_size;
   toolhost_dt_stop_reason_t reason;
   int64_t thread; /* thread id or vCPU index that stopped; -1 when unknown */
   uint64_t pc;    /* instruction pointer at the stop */
   uint64_t code;  /* signal number, NTSTATUS, bugcheck code or exit status. Signal numbers are the
                      * target OS's (Linux: 10 is SIGUSR1), whatever the wire numbers them. */
   uint64_t address; /* data address of a watchpoint hit, else 0 */
   char description
      [256]; /* one line from the backend, e.g. "SIGSEGV" or "Break instruction exception" */
} toolhost_dt_stop_t;

/* ---- A session ------------------------------------------------------------------------------ */

typedef struct toolhost_debug_target toolhost_debug_target_t;

/* The table of one session, filled by the backend; `struct_size` is the sizeof it compiled
 * against. Every function of 1.0 is required; functions appended later may be NULL. */
struct toolhost_debug_target {
   uint32_t struct_size;
   void *impl; /* the backend's */

   /* TOOLHOST_DT_CAP_* of this session (may depend on what the peer offered). */
   uint64_t (*capabilities)(toolhost_debug_target_t *t);

   /* Ends the session and frees it: removes every breakpoint the session set, lets a halted
    * target run again where the wire allows it, closes the connection. `t` is invalid after. */
   void (*close)(toolhost_debug_target_t *t);

   /* Writes a JSON object describing the target:
    *   {"arch":"x86_64", "os":"linux"|"windows"|"", "kind":"process"|"system"|"dump",
    *    "registers":[{"name":"rax","bits":64,"offset":0,"role":""}, ...],
    *    "hints":{...}}
    * `registers` is the register map: `offset` is the byte offset in the buffer of
    * `read_registers`; `role` is "pc", "sp", "fp", "flags", "cr3" or "". `hints` holds what the
    * target offers: "kernel_base", "module_list_head", "ps_active_process_head", "dtb",
    * "executable" (a path), "bugcheck" ({code, parameters}) ... numbers as "0x..." strings. */
   void (*describe)(toolhost_debug_target_t *t, toolhost_writer_t *out);

   /* Reads `size` bytes at `address` into `buffer`. Stores the number of bytes read in `*done`
    * (a prefix; fewer when the rest is unmapped) and returns TOOLHOST_OK if at least one byte was
    * read, TOOLHOST_ERR_NOT_FOUND if none was, TOOLHOST_ERR_UNSUPPORTED for a space the backend
    * lacks. `error` (may be NULL) gets a sentence on failure. */
   toolhost_status_t (*read_memory)(toolhost_debug_target_t *t,
                                    toolhost_dt_space_t space,
                                    uint64_t address,
                                    void *buffer,
                                    size_t size,
                                    size_t *done,
                                    toolhost_writer_t *error);
   toolhost_status_t (*write_memory)(toolhost_debug_target_t *t,
                                     toolhost_dt_space_t space,
                                     uint64_t address,
                                     const void *data,
                                     size_t size,
                                     toolhost_writer_t *error);

   /* All registers of one thread / vCPU (-1: the current one) in the register map's layout
    * (little-endian values at their offsets). `size` is the buffer's capacity; `*done` the bytes
    * written. */
   toolhost_status_t (*read_registers)(toolhost_debug_target_t *t,
                                       int64_t thread,
                                       void *buffer,
                                       size_t size,
                                       size_t *done,
                                       toolhost_writer_t *error);
   /* Writes one register by its index in the register map. */
   toolhost_status_t (*write_register)(toolhost_debug_target_t *t,
                                       int64_t thread,
                                       uint32_t index,
                                       const void *value,
                                       size_t size,
                                       toolhost_writer_t *error);

   /* Breakpoints: software, hardware execution, and data watchpoints of `length` 1, 2, 4 or 8.
    * Setting the same (type, address, length) twice is not an error. */
   toolhost_status_t (*set_breakpoint)(toolhost_debug_target_t *t,
                                       toolhost_dt_breakpoint_type_t type,
                                       uint64_t address,
                                       uint32_t length,
                                       toolhost_writer_t *error);
   toolhost_status_t (*clear_breakpoint)(toolhost_debug_target_t *t,
                                         toolhost_dt_breakpoint_type_t type,
                                         uint64_t address,
                                         uint32_t length,
                                         toolhost_writer_t *error);

   /* Resumes the target (all threads / vCPUs; a step steps `thread`, -1 the current one) and
    * returns at once. */
   toolhost_status_t (*resume)(toolhost_debug_target_t *t,
                               toolhost_dt_resume_t how,
                               int64_t thread,
                               toolhost_writer_t *error);
   /* Asks a running target to stop; returns at once. The stop arrives through `wait_stop`.
    * [any-thread] */
   toolhost_status_t (*interrupt)(toolhost_debug_target_t *t, toolhost_writer_t *error);
   /* Waits up to `timeout_ms` (0: just poll) for the target to stop. Returns TOOLHOST_OK and
    * fills `stop` when it stopped (or was already stopped with an unreported stop), or
    * TOOLHOST_ERR_TIMEOUT when it is still running. A stop is reported once. */
   toolhost_status_t (*wait_stop)(toolhost_debug_target_t *t,
                                  uint32_t timeout_ms,
                                  toolhost_dt_stop_t *stop,
                                  toolhost_writer_t *error);
   /* True while the target runs (resumed and no stop collected yet). */
   bool (*is_running)(toolhost_debug_target_t *t);

   /* Writes a JSON array of threads / vCPUs: [{"id":N,"name":"...","current":true}, ...]. */
   void (*list_threads)(toolhost_debug_target_t *t, toolhost_writer_t *out);
   /* Makes `thread` current for register reads and steps. */
   toolhost_status_t (*select_thread)(toolhost_debug_target_t *t,
                                      int64_t thread,
                                      toolhost_writer_t *error);

   /* Writes a JSON array of loaded modules: [{"name":"libc.so.6","path":"/usr/lib/...",
    * "base":"0x7f...","size":"0x..."}, ...]; "[]" when the backend has no list. */
   void (*list_modules)(toolhost_debug_target_t *t, toolhost_writer_t *out);

   /* Moves target output captured since the last call (DbgPrint, O packets) into `out`, one
    * line per message, each ending in '\n'. [any-thread] */
   void (*read_output)(toolhost_debug_target_t *t, toolhost_writer_t *out);

   /* Backend-specific operations the debugger exposes as commands (".reboot", "rdmsr",
    * "wrmsr", "bugcheck", "switch_processor", ...). `args_json` is a JSON object; writes a JSON
    * result on success. Returns TOOLHOST_ERR_UNSUPPORTED for an operation it does not know. */
   toolhost_status_t (*extension)(toolhost_debug_target_t *t,
                                  const char *operation,
                                  const char *args_json,
                                  toolhost_writer_t *out);

   /* ---- Signals. Appended: a caller checks `struct_size` covers a field (and that it is not
    * NULL) before it calls it; a backend without them cannot deliver signals. -------------- */

   /* Resumes like `resume` and delivers POSIX signal `signal` (the target OS's number; 0: none)
    * to the thread that reported the last stop, as a debugger passes a signal it intercepted on
    * to the program. TOOLHOST_ERR_UNSUPPORTED, with a sentence, when the target cannot take a
    * signal (a whole machine, a snapshot). */
   toolhost_status_t (*resume_with_signal)(toolhost_debug_target_t *t,
                                           toolhost_dt_resume_t how,
                                           int64_t thread,
                                           int32_t signal,
                                           toolhost_writer_t *error);
   /* Sets the signals the backend delivers to the program by itself, without stopping or
    * reporting them (gdbserver's QPassSignals); `count` numbers at `signals` (the caller's,
    * read during the call), replacing the previous set; 0 clears it. Called while halted.
    * TOOLHOST_ERR_UNSUPPORTED when the wire has no such filter: every signal is then reported
    * and the debugger resumes past the ones it does not stop for. */
   toolhost_status_t (*pass_signals)(toolhost_debug_target_t *t,
                                     const int32_t *signals,
                                     size_t count,
                                     toolhost_writer_t *error);
   /* The siginfo of the signal that caused the last stop, in the target's own layout (Linux
    * x86-64: the 128-byte siginfo_t), into `buffer` of `size` bytes; `*done` gets the bytes
    * written. TOOLHOST_ERR_NOT_FOUND when the last stop was not a signal or the target keeps
    * no siginfo, TOOLHOST_ERR_UNSUPPORTED when the wire cannot read it. Called while halted. */
   toolhost_status_t (*read_siginfo)(toolhost_debug_target_t *t,
                                     void *buffer,
                                     size_t size,
                                     size_t *done,
                                     toolhost_writer_t *error);
};

/* ---- The factory a backend registers ------------------------------------------------------ */

typedef struct toolhost_debug_target_factory {
   uint32_t struct_size;
   uint32_t version;            /* TOOLHOST_DEBUG_TARGET_MAJOR; the debugger refuses another */
   const char *name;            /* "gdb", "kd", ... (the `backend` argument of `open`) */
   const char *description;     /* one line, shown by the debugger's help */
   const char *default_connect; /* used when `open` gives no `connect`; may be NULL */
   const char *connect_help;    /* what `connect` means for this backend, for error messages */

   /* Opens a session. `connect` is never NULL (the default if the user gave none); `key` and
    * `options_json` may be NULL. Returns NULL after writing one sentence that names the
    * problem and what to do into `error`. May block while connecting; should give up after
    * `timeout_ms`. [any-thread] */
   toolhost_debug_target_t *(*open)(const struct toolhost_debug_target_factory *factory,
                                    const char *connect,
                                    const char *key,
                                    const char *options_json,
                                    uint32_t timeout_ms,
                                    toolhost_writer_t *error);

   /* 1.1: TOOLHOST_DEBUG_TARGET_MINOR the backend was built with; 0 when absent. */
   uint32_t minor;
} toolhost_debug_target_factory_t;

#ifdef __cplusplus
}
#endif

#endif /* TOOLHOST_DEBUG_TARGET_H */
