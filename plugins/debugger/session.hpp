// One attached target and everything a person types at it: the command table, run control
// with ntoseye's admission rules, stop rendering and the `[target ...]` trailer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <toolhost/disasm/decoder.hpp>
#include <toolhost/symbols/symbol_path.hpp>

#include "breakpoints.hpp"
#include "dwarf_symbols.hpp"
#include "expression.hpp"
#include "signal_filters.hpp"
#include "stack_walker.hpp"
#include "symbols.hpp"
#include "target.hpp"
#include "windows_kernel.hpp"

namespace toolhost::debugger {

// How a command relates to the run state (ntoseye's [H], [R], [Run] and unmarked).
enum class run_kind {
  any,      // runs whatever the state (help, ?, lm, bl, memory on a backend that reads live)
  halted,   // needs a halted target: waits for the stop first
  resume,   // resumes and waits for the next stop
  running,  // only meaningful while running (break)
};

class session;

struct command_spec {
  std::vector<std::string> names;
  std::string usage;
  std::string summary;
  std::string details;
  run_kind kind;
  absl::Status (session::*run)(const std::string& name, std::string_view args);
};

const std::vector<command_spec>& command_table();
const command_spec* find_command(std::string_view name);
// `help` (empty topic) or `.help <command>`; works without a target.
absl::StatusOr<std::string> render_help(std::string_view topic);

// The result of one `command` call.
struct line_result {
  std::string output;  // the text the commands printed (without trailer and dbgprint lines)
  bool error = false;
  std::string result_json = "null";  // the typed result of the last command that has one
  std::string target_json;           // the run-state snapshot
  std::vector<std::string> debug_output;
  std::string trailer;
};

class session final : public expression_context {
 public:
  explicit session(std::unique_ptr<target> t);
  ~session() override;

  // Runs one REPL line under the run-control rules; never waits past `timeout`.
  // `cancelled` is polled while waiting.
  // `progress` (may be empty) reports long work in the call: symbol downloads.
  using progress_fn = std::function<void(double done, double total, const std::string& message)>;
  line_result run_line(std::string_view line, std::chrono::milliseconds timeout, const std::function<bool()>& cancelled,
                       const progress_fn& progress = {});
  // Between calls: collects a stop if one arrived, resumes it when it does not count, else
  // keeps its rendering for the next call. Called with the session's lock held.
  void service();
  // What `open` reports: backend, processors and the state at attach.
  std::string open_summary_json() const;
  std::string attach_text();
  target& tgt() { return *target_; }
  // The symbol path (.sympath); set before the first command from the settings or
  // _NT_SYMBOL_PATH, kept by the tools across sessions.
  absl::Status set_symbol_path(std::string_view text);
  const symbols::symbol_path& symbol_path() const { return sympath_; }
  void set_symbol_timeout(std::chrono::milliseconds t) { symbol_timeout_ = t; }

  // expression_context
  std::optional<uint64_t> register_value(std::string_view name) override;
  absl::StatusOr<uint64_t> symbol_address(std::string_view name) override;
  absl::StatusOr<uint64_t> read_memory(uint64_t address, int size) override;

  // Commands (command_table() points at these).
  absl::Status cmd_go(const std::string& name, std::string_view args);
  absl::Status cmd_step(const std::string& name, std::string_view args);
  absl::Status cmd_go_up(const std::string& name, std::string_view args);
  absl::Status cmd_step_to(const std::string& name, std::string_view args);
  absl::Status cmd_break(const std::string& name, std::string_view args);
  absl::Status cmd_registers(const std::string& name, std::string_view args);
  absl::Status cmd_display(const std::string& name, std::string_view args);
  absl::Status cmd_edit(const std::string& name, std::string_view args);
  absl::Status cmd_search(const std::string& name, std::string_view args);
  absl::Status cmd_unassemble(const std::string& name, std::string_view args);
  absl::Status cmd_bp(const std::string& name, std::string_view args);
  absl::Status cmd_ba(const std::string& name, std::string_view args);
  absl::Status cmd_bl(const std::string& name, std::string_view args);
  absl::Status cmd_bc_bd_be(const std::string& name, std::string_view args);
  absl::Status cmd_stack(const std::string& name, std::string_view args);
  absl::Status cmd_frame(const std::string& name, std::string_view args);
  absl::Status cmd_dv(const std::string& name, std::string_view args);
  absl::Status cmd_lm(const std::string& name, std::string_view args);
  absl::Status cmd_ln(const std::string& name, std::string_view args);
  absl::Status cmd_x(const std::string& name, std::string_view args);
  absl::Status cmd_evaluate(const std::string& name, std::string_view args);
  absl::Status cmd_threads(const std::string& name, std::string_view args);
  absl::Status cmd_help(const std::string& name, std::string_view args);
  absl::Status cmd_backend(const std::string& name, std::string_view args);
  absl::Status cmd_dump(const std::string& name, std::string_view args);
  absl::Status cmd_reload(const std::string& name, std::string_view args);
  absl::Status cmd_sympath(const std::string& name, std::string_view args);
  absl::Status cmd_dt(const std::string& name, std::string_view args);
  // Windows kernel targets (commands_windows.cpp).
  absl::Status cmd_process(const std::string& name, std::string_view args);
  absl::Status cmd_dot_process(const std::string& name, std::string_view args);
  absl::Status cmd_thread(const std::string& name, std::string_view args);
  absl::Status cmd_dot_thread(const std::string& name, std::string_view args);
  absl::Status cmd_peb(const std::string& name, std::string_view args);
  absl::Status cmd_pte(const std::string& name, std::string_view args);
  absl::Status cmd_vtop(const std::string& name, std::string_view args);
  absl::Status cmd_lmi(const std::string& name, std::string_view args);
  absl::Status cmd_dh(const std::string& name, std::string_view args);
  absl::Status cmd_ld(const std::string& name, std::string_view args);
  absl::Status cmd_sx(const std::string& name, std::string_view args);
  absl::Status cmd_quit(const std::string& name, std::string_view args);
  absl::Status cmd_detach(const std::string& name, std::string_view args);

  // `.detach` ran: the caller ends the session (the backend removes the breakpoints and lets
  // the target run on).
  bool detach_requested() const { return detach_requested_; }
  // Commands followed `.detach` on its line (they were not run).
  bool detach_skipped_rest() const { return detach_skipped_rest_; }

 private:
  // One frame as k shows it: a physical frame of the walk, or an inline function's frame
  // inside one (which shares its registers).
  struct frame {
    uint64_t ip = 0, sp = 0, return_address = 0;
    frame_origin how = frame_origin::context;
    bool activation = true;          // ip is exact (frame 0, or a frame a signal interrupted)
    bool signal_trampoline = false;  // the kernel's signal return path (gdb: <signal handler called>)
    unwind_registers regs;           // the physical frame's registers, as far as the walk knows them
    size_t physical = 0;             // index of the physical frame
    size_t group = 0;         // frames of one physical frame's inline chain share a group; a tail call has its own
    size_t inline_depth = 0;  // 0: the innermost function at ip; 1: the one it is inlined into ...
    bool inlined = false;     // an inline function's frame
    bool tail_call = false;   // a function that tail-called the frame below (no frame of its own)
    const module* mod = nullptr;
    const symbol_source* source = nullptr;  // the source that named the frame (lines, variables)
    std::string function;                   // the debug information's name; "" when none
    std::optional<source_position> line;
  };
  // What a signal stop's siginfo says, where the backend reads it.
  struct signal_event {
    int number = 0;
    std::optional<int> code;          // si_code
    std::optional<uint64_t> address;  // si_addr of a fault
    std::optional<int> sender;        // si_pid of a signal another process sent
    std::optional<int> child;         // SIGCHLD: the child's pid
    std::optional<int> child_status;  // SIGCHLD: its exit status or signal
  };

  // Run control.
  using clock = std::chrono::steady_clock;
  bool running();
  // Waits for a stop until the deadline; renders it into out_. True when stopped.
  absl::StatusOr<bool> wait_for_stop(clock::time_point deadline);
  // Decides whether a stop is reported (true) or absorbed and the target resumed (false).
  absl::StatusOr<bool> accept_stop(const toolhost_dt_stop_t& stop);
  void render_stop(const toolhost_dt_stop_t& stop, const std::string& banner);
  // A stop a halted target reported while a command talked to it (KD: a state change that came
  // instead of a reply) is rendered into out_; a resuming command later on the line is then
  // refused once, as for a stop that arrived between calls.
  void collect_stop_while_halted();
  // Resumes and waits for the next stop. `deliver` says whether a signal the last stop
  // intercepted goes to the program (gn: true, gh: false; absent: its handling status).
  absl::Status resume_and_wait(toolhost_dt_resume_t how, std::optional<bool> deliver = std::nullopt);
  // The one place the target is resumed: applies the background signal set, then delivers
  // or drops the intercepted signal.
  absl::Status resume_target(toolhost_dt_resume_t how, std::optional<bool> deliver);
  signal_event read_signal_event(const toolhost_dt_stop_t& stop);
  // "(pid.tid): Signal SIGSEGV (11) Segmentation fault - code ..., address ..."
  std::string signal_line(const toolhost_dt_stop_t& stop, const signal_event& event);
  // How to continue with or without the signal, or why this target cannot.
  std::string signal_hint(int signal);
  // A notice for the caller (sxn signals), kept bounded between calls.
  void note(const std::string& line);
  absl::Status step_over_once();
  void clear_temporaries();
  void after_stop();  // refreshes caches after a stop is accepted

  // State helpers.
  absl::StatusOr<const register_values*> regs();
  absl::StatusOr<uint64_t> pc();
  absl::StatusOr<uint64_t> sp();
  std::string symbol_of(uint64_t address) const;
  std::string instruction_line(uint64_t address, bool with_header);
  // The register lines of `r`; `frame_values`: an outer frame's (missing ones shown as ?).
  std::string register_block(const register_values* frame_values = nullptr);
  // The stack as k shows it (inline frames expanded), at most `max_frames` frames.
  absl::StatusOr<std::vector<frame>> walk_stack(size_t max_frames);
  // The physical frames; `pages` caches the stack memory read.
  absl::StatusOr<std::vector<walked_frame>> walk_physical(size_t max_frames, std::map<uint64_t, std::string>& pages);
  // Reads stack words through `pages` (a page per read, at most 256 pages).
  stack_reader stack_memory(std::map<uint64_t, std::string>& pages);
  // The parameters and locals of frames[index] (its caller resolves values at the entry).
  std::vector<variable_value> frame_variables(const std::vector<frame>& frames, size_t index,
                                              const stack_reader& memory);
  // The registers of the frame .frame selected (nullopt for frame 0): those the walk knows.
  std::optional<register_values> selected_frame_registers();
  // k's lines for `frames` (and its JSON in `json` when given).
  // `arguments` (kb): each frame's first four stack words above its return address (x64's home
  // space for the callee's register arguments).
  std::string stack_text(const std::vector<frame>& frames, bool numbered, bool parameters, std::string* json,
                         bool arguments = false);
  // A variable's value in dt's words; its JSON decoding in `json` when given.
  std::string variable_text(const frame& f, const variable_value& v, std::string* json);
  absl::StatusOr<uint64_t> eval(std::string_view text);
  absl::StatusOr<uint64_t> eval_prefix(std::string_view text, size_t& pos);
  // "addr", "addr L count", "addr end": start and count of `unit`-byte items.
  // Parses from `pos` and advances it.
  absl::Status parse_range(const std::string& name, std::string_view args, size_t& pos, size_t unit,
                           uint64_t default_count, uint64_t& start, uint64_t& count,
                           std::optional<uint64_t> default_start);
  absl::Status arm(const breakpoint& b);
  absl::Status disarm(const breakpoint& b);
  std::string trailer();
  std::string target_json();
  // Re-reads the module list when it may have changed; ELF modules' symbols are read at once
  // (cheap, and what lm has always shown), others when first used.
  void refresh_modules(bool load_elf = true);
  // The symbol loader (symbols.hpp): asks each provider in turn.
  module_symbols load_module_symbols(const module& m);
  bool is_elf_module(const module& m) const;
  // bu breakpoints whose expressions resolve now (or no longer do) after the module list changed.
  void resolve_deferred_breakpoints();

  // Windows kernel targets (session_windows.cpp). Discovery runs at attach and after a reboot;
  // a target with no Windows kernel behind it stays a plain target.
  void discover_windows();
  // The kernel's modules (PsLoadedModuleList) and the scope process's user modules, for a
  // backend that has no module list of its own.
  std::optional<std::vector<module_info>> windows_modules();
  // The process whose page tables the stopped vCPU has loaded.
  std::optional<windows::process> current_process();
  // The ETHREAD running on the current vCPU, 0 when unknown.
  uint64_t current_ethread();
  // The kernel's processors (nt!KeNumberProcessors), else the backend's vCPUs (at least 1).
  uint32_t windows_processors();
  // `~` on a Windows kernel: each processor's current thread beside the backend's vCPU list.
  void list_processors();
  std::string windows_trailer();
  std::string scope_trailer() const;
  // bp /p, /t: whether the stopped vCPU runs in the breakpoint's process and thread.
  bool in_breakpoint_scope(const breakpoint& b);  // " | scope <name> (<pid>)" while a .process scope is set
  // vertarget's lines for a Windows kernel, and its JSON in `json`.
  std::string windows_version_text(std::string& json);
  std::string windows_target_json();
  // Virtual reads through the Windows page tables when a scope is set or the backend cannot
  // reach the kernel itself.
  void install_translation();
  // "4", "0n4", "ffffa00000001000": a PID or an EPROCESS (ntoseye's order: a decimal PID, an
  // EPROCESS, then the value as a PID).
  absl::StatusOr<windows::process> find_process(std::string_view text);
  absl::Status need_windows(const std::string& name) const;
  uint64_t current_cr3();
  // The module's PE image read from the target's memory.
  absl::StatusOr<std::shared_ptr<const pe::image>> module_image(const module& m);
  std::vector<std::pair<std::string, std::string>> module_facts(const module& m);
  // The module's PDB on the symbol path, as a source; `problem` says why there is none.
  std::shared_ptr<const symbol_source> pdb_for(const module& m, const pe::image& image, std::string& problem);
  // A type named "module!Type" or "Type" (nt first, then every module with types).
  absl::StatusOr<std::pair<const types::type_table*, std::string>> find_type(std::string_view name,
                                                                             std::optional<types::type_id>& id);
  void refresh_threads();
  absl::Status usage_error(const std::string& name, const std::string& problem) const;
  bool can_stop() const;
  // Why a break-in sent earlier has not stopped the running target, and what to do.
  std::string break_in_failure() const;

  std::unique_ptr<target> target_;
  symbol_table symbols_;
  dwarf::search_paths debug_paths_ = default_debug_paths();  // separate debug files of ELF modules
  disasm::decoder decoder_{disasm::mode::x86_64};
  std::vector<breakpoint> breakpoints_;
  std::vector<temporary_breakpoint> temporaries_;
  int next_breakpoint_id_ = 0;
  std::optional<register_values> registers_;
  size_t selected_frame_ = 0;  // .frame: the frame dv and r show (kn's number); 0 after each stop
  std::vector<thread_info> threads_;
  std::optional<toolhost_dt_stop_t> last_stop_;
  std::optional<signal_event> last_signal_;  // the last stop's, when it was a signal
  signal_filters signals_;
  bool signals_dirty_ = true;  // the backend's background set must be sent before resuming
  int pending_signal_ = 0;     // intercepted at the last stop, not yet delivered or dropped
  toolhost_dt_resume_t last_resume_ = TOOLHOST_DT_CONTINUE;
  std::string notices_;  // sxn notices collected between calls
  size_t notice_count_ = 0, notices_dropped_ = 0;
  bool exited_ = false;
  bool detach_requested_ = false, detach_skipped_rest_ = false;
  // When `break` sent a break-in the target has not answered yet; cleared by the next resume.
  // While it is pending a halted-only command waits for the stop it should bring.
  std::optional<clock::time_point> break_sent_;
  bool modules_stale_ = true;
  uint64_t next_display_ = 0;  // where a bare `db` continues
  uint64_t next_unassemble_ = 0;

  // The call in progress.
  std::string out_;
  std::string result_json_ = "null";
  clock::time_point deadline_{};
  const std::function<bool()>* cancelled_ = nullptr;
  const progress_fn* progress_ = nullptr;
  symbols::symbol_path sympath_;
  std::optional<windows::kernel> windows_;
  bool windows_pending_ = false;           // rebooted: rediscovery pending
  bool had_windows_ = false;               // a Windows kernel was found once
  bool windows_retry_ = false;             // rediscovery not yet tried since the last stop
  std::string windows_problem_;            // why discovery failed (vertarget, .process)
  std::optional<windows::process> scope_;  // .process
  uint64_t implicit_thread_ = 0;           // .thread
  std::chrono::milliseconds symbol_timeout_{20000};
  bool refuse_resume_once_ = false;
  std::string parked_;  // a stop collected between calls, rendered, not yet shown
  bool has_parked_ = false;
};

}  // namespace toolhost::debugger
