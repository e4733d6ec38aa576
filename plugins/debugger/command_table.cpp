// The command table: names, usage, summaries and how each relates to the run state.
#include <algorithm>
#include <cctype>

#include "command_line.hpp"
#include "session.hpp"

namespace toolhost::debugger {

const std::vector<command_spec>& command_table() {
  static const std::vector<command_spec> table = {
      {{"g", "gh", "gn"},
       "g|gh|gn [address]",
       "continue, or run to a temporary breakpoint at address",
       "Resumes and waits up to timeout_ms for the next stop; ends in [target running] if none comes. After a "
       "signal stop, g delivers the signal to the program unless it is marked handled (sx), gh resumes without "
       "it (handled: the program never sees it), gn delivers it (not handled).",
       run_kind::resume,
       &session::cmd_go},
      {{"gu"},
       "gu",
       "run until the current function returns",
       "Plants a temporary breakpoint at the return address (deeper recursive calls pass through it).",
       run_kind::resume,
       &session::cmd_go_up},
      {{"p"},
       "p [count]",
       "step over: one instruction, calls run to their return",
       "",
       run_kind::resume,
       &session::cmd_step},
      {{"t"}, "t [count]", "step into: one instruction", "", run_kind::resume, &session::cmd_step},
      {{"pa"},
       "pa <address>",
       "step over until address",
       "Each step prints its instruction; the stop at address is rendered in full.",
       run_kind::resume,
       &session::cmd_step_to},
      {{"break"},
       "break",
       "interrupt a running target",
       "Waits up to timeout_ms for the stop. A break-in the target has not answered stays pending: halted-only "
       "commands then wait for its stop, and the message says why the stub could not interrupt and what to do "
       "(gdbserver cannot interrupt a process it attached to that leads no process group).",
       run_kind::running,
       &session::cmd_break},
      {{".detach"},
       ".detach",
       "remove the breakpoints, let the target run on and release it",
       "The same as the close tool; `open` attaches again. The rest of the line is not run.",
       run_kind::any,
       &session::cmd_detach},
      {{"q", "qq", "qd", "quit"},
       "q | qd",
       "refused: the session belongs to the MCP server",
       "WinDbg's q ends the debugger and qd detaches first; here the session is the server's, so both are refused "
       "and say so. `.detach` or the close tool releases the target.",
       run_kind::any,
       &session::cmd_quit},
      {{"r"},
       "r [reg[=expr][, reg...]]",
       "show registers, or show / set named ones",
       "r alone shows the register block and the current instruction; r rax=expr writes rax.",
       run_kind::halted,
       &session::cmd_registers},
      {{"db", "dw", "dd", "dq", "dp", "dc", "da", "du"},
       "d{b|w|d|q|p|c|a|u} [address [L count | end]]",
       "display memory as bytes, words, dwords, qwords, pointers, dwords+ASCII, ASCII or UTF-16 strings",
       "Without an address the display continues where the last one ended. Counts are in items of the size.",
       run_kind::any,
       &session::cmd_display},
      {{"dqs", "dps", "dds"},
       "d{q|p|d}s [address [L count | end]]",
       "display pointers (qwords, pointer-size, dwords) with the symbol each one points at",
       "Each line is the address, the value and, when a module holds the value, module!symbol+offset. 16 values "
       "by default.",
       run_kind::any,
       &session::cmd_display},
      {{"!db", "!dw", "!dd", "!dq"},
       "!d{b|w|d|q} <physical address> [L count | end]",
       "display physical memory (backends that read it: QEMU's gdbstub, memory, dump, KD)",
       "",
       run_kind::any,
       &session::cmd_display},
      {{"eb", "ew", "ed", "eq"},
       "e{b|w|d|q} <address> <value> [values...]",
       "write bytes, words, dwords or qwords",
       "",
       run_kind::any,
       &session::cmd_edit},
      {{"s"},
       "s [-b|-w|-d|-q|-a|-u] <start> L<length> <pattern>",
       "search memory",
       "-a and -u take a quoted string; the others take values of that size.",
       run_kind::any,
       &session::cmd_search},
      {{"u"},
       "u [address [L count]]",
       "disassemble forward (8 instructions by default)",
       "",
       run_kind::any,
       &session::cmd_unassemble},
      {{"ub"},
       "ub [address [L count]]",
       "disassemble the instructions before address",
       "",
       run_kind::any,
       &session::cmd_unassemble},
      {{"uf"},
       "uf <address>",
       "disassemble the whole function holding address",
       "",
       run_kind::any,
       &session::cmd_unassemble},
      {{"bp"},
       "bp [/1] [/w \"cond\"] [/p <eprocess|pid>] [/t <ethread>] <address> [passes] [if <cond> | \"cond\"]",
       "set a software breakpoint",
       "/1 deletes it when hit; passes stops at that hit; a condition stops only when it is non-zero. On a Windows "
       "kernel /p stops only in that process and /t only in that thread: hits elsewhere are resumed at once, also "
       "between calls, so the target is never left frozen (bl's JSON counts them: foreign_hits).",
       run_kind::halted,
       &session::cmd_bp},
      {{"bu"},
       "bu [/1] [/w \"cond\"] <module!symbol> [passes] [if <cond> | \"cond\"]",
       "set a deferred breakpoint: by symbol, set when the symbol becomes known",
       "The expression is kept and evaluated again whenever the module list changes, so the breakpoint is set "
       "once its module loads and follows the module if it moves; bl marks an unresolved one 'u'. Options as bp.",
       run_kind::halted,
       &session::cmd_bp},
      {{"ba"},
       "ba <e|r|w><1|2|4|8> <address> [passes]",
       "set a hardware breakpoint (execute, read/write, write)",
       "",
       run_kind::halted,
       &session::cmd_ba},
      {{"bl"}, "bl", "list breakpoints", "", run_kind::any, &session::cmd_bl},
      {{"bc"}, "bc <ids | id-id | *>", "clear breakpoints", "", run_kind::halted, &session::cmd_bc_bd_be},
      {{"bd"}, "bd <ids | id-id | *>", "disable breakpoints", "", run_kind::halted, &session::cmd_bc_bd_be},
      {{"be"}, "be <ids | id-id | *>", "enable breakpoints", "", run_kind::halted, &session::cmd_bc_bd_be},
      {{"k", "kn", "kp", "kP", "kpn", "knp", "kPn", "knP", "kb", "kbn", "knb"},
       "k[n][p|b] [count]",
       "stack backtrace (n numbers the frames, p adds the parameters, b the first four stack arguments)",
       "Unwinds by each module's unwind data: CFI (.eh_frame, .debug_frame) for ELF, .pdata/UNWIND_INFO for x64 PE "
       "images (read from the image in memory); a frame found by the frame-pointer chain instead says so. kb shows "
       "the four stack words above each return address (the callee's home space). Inline functions and functions that "
       "tail-called the frame below get frames of their own ((Inline "
       "Function), (Tail Call)), as gdb shows them. With DWARF each frame has its [file @ line] and, with p, its "
       "parameters' types and values. 0x40 frames by default, 0x400 at most.",
       run_kind::halted,
       &session::cmd_stack},
      {{".frame"},
       ".frame [/r] [N]",
       "select frame N (kn's numbering) for dv and r, or show the selected one",
       "dv then shows that frame's parameters and locals, r its registers as the unwind data restores them (the "
       "others show as ?). /r shows the registers at once. Every stop selects frame 0 again.",
       run_kind::halted,
       &session::cmd_frame},
      {{"dv"},
       "dv [/t] [/i] [/V] [pattern]",
       "the selected frame's parameters and locals with their values",
       "From the module's DWARF: the parameters, then the locals of each block that holds the pc, innermost first, "
       "evaluated from their location expressions (a value that lives nowhere at the pc shows <value unavailable>). "
       "/t adds the types, /i says which are parameters (prm) and locals (loc), /V where each value lives; a pattern "
       "(* and ?) selects by name.",
       run_kind::halted,
       &session::cmd_dv},
      {{"lm"},
       "lm[v][l][k|u][1m][sm] [m <pattern>] [a <address>]",
       "list modules and their symbols: (deferred), (pdb symbols), (export symbols), (no symbols)",
       "v adds each image's facts (path, timestamp, checksum, size, PDB identity); m filters by name (* and ?); a "
       "shows the module holding an address; l only modules with symbols loaded; k / u kernel / user modules; 1m "
       "names only; sm sorted by name. The letters may run on: lmvm nt.",
       run_kind::any,
       &session::cmd_lm},
      {{".reload"},
       ".reload [/f] [/u] [module]",
       "re-read the module list; symbols load on first use, or now with /f",
       "Without /f every module's symbols are deferred until a command needs them (WinDbg's default); /f loads them "
       "now and shows where each came from; /u unloads them. A module is named as lm names it, or by its image name.",
       run_kind::any,
       &session::cmd_reload},
      {{".sympath", ".sympath+"},
       ".sympath [path] | .sympath+ <element>",
       "show or set the symbol path, or append to it",
       "Elements are separated by ';': a folder; srv*CACHE*URL (a symbol server, downloads kept in CACHE in "
       "symbol-store layout); srv*URL (cached in the default store, ~/.cache/toolhost/symbols); srv*STORE (a local "
       "store, one- or two-tier); cache*DIR (later elements' downloads kept in DIR); a bare URL. Without a network, "
       "point it at a folder that holds the PDBs; modules then fall back to their export symbols for what is missing. "
       "Set at start from the debugger.symbol_path setting, else _NT_ALT_SYMBOL_PATH and _NT_SYMBOL_PATH.",
       run_kind::any,
       &session::cmd_sympath},
      {{".symfix", ".symfix+"},
       ".symfix[+] [cache]",
       "use Microsoft's symbol server (srv*cache*https://msdl.microsoft.com/download/symbols)",
       ".symfix replaces the path, .symfix+ appends to it; the cache defaults to ~/.cache/toolhost/symbols.",
       run_kind::any,
       &session::cmd_sympath},
      {{"dt"},
       "dt [-r[N]] [-a[N]] [module!]Type [address] [field ...] | dt module!Prefix*",
       "show a type's layout, or its values at an address, in WinDbg's layout",
       "-r expands embedded structures N levels (bare -r: 1); -a shows N array elements one per line; fields may be "
       "names, Prefix* or paths (Pcb.DirectoryTableBase, through pointers when an address is given). Types come from "
       "PDBs on the symbol path. A pattern lists the types that match.",
       run_kind::any,
       &session::cmd_dt},
      {{"!process"},
       "!process [<pid|eprocess|0|-1> [flags [image]]]",
       "Windows processes in WinDbg's layout: !process 0 0 lists them all, !process 0 0 lsass.exe by image",
       "Each shows its EPROCESS, SessionId, Cid, Peb, ParentCid, DirBase, ObjectTable, HandleCount and image. Flags: "
       "1 adds the VAD root, token and times, 2 or 4 the threads. A PID is decimal first, then an EPROCESS "
       "address, then the value as a PID. Without arguments: the process in scope, else the current one.",
       run_kind::any,
       &session::cmd_process},
      {{".process"},
       ".process [/p] [/r] [<pid|eprocess> | 0]",
       "show or set the process whose page tables memory commands read (the scope)",
       "With a process, user addresses (db, dt, !peb, lm's user modules) are read through its page tables until "
       ".process 0; the trailer shows 'scope <name> (<pid>)'. /r reloads the user modules' symbols.",
       run_kind::any,
       &session::cmd_dot_process},
      {{"!thread"},
       "!thread [ethread]",
       "a Windows thread: Cid, TEB, state, owning process, stack, times",
       "Without an address: the implicit thread (.thread), else the one running on the current vCPU.",
       run_kind::any,
       &session::cmd_thread},
      {{".thread"},
       ".thread [ethread | 0]",
       "show or set the implicit thread (!thread's default)",
       "",
       run_kind::any,
       &session::cmd_dot_thread},
      {{"!peb"},
       "!peb [address]",
       "the process environment block of the process in scope and its loaded modules",
       "",
       run_kind::any,
       &session::cmd_peb},
      {{"!pte"},
       "!pte <address>",
       "the PXE, PPE, PDE and PTE of an address: self-map addresses, contents, flags, PFNs",
       "Large pages (2 MiB, 1 GiB) are shown as such; an entry that is not valid is decoded (transition, page file, "
       "prototype, demand zero).",
       run_kind::any,
       &session::cmd_pte},
      {{"!vtop"},
       "!vtop <dirbase|0> <address>",
       "translate a virtual address through a directory table",
       "0 uses the process in scope or the current one; a directory base that is not page-aligned is a PFN.",
       run_kind::any,
       &session::cmd_vtop},
      {{"!lmi"},
       "!lmi <module|address>",
       "a loaded module's image facts: machine, timestamp, size, PDB identity, symbols",
       "",
       run_kind::any,
       &session::cmd_lmi},
      {{"!dh"},
       "!dh [-f|-s|-a] <module|address>",
       "a loaded image's PE headers (-f file and optional, -s sections)",
       "",
       run_kind::any,
       &session::cmd_dh},
      {{"ld"},
       "ld <module>",
       "load a module's symbols now",
       "The module may be a pattern (ld ws*).",
       run_kind::any,
       &session::cmd_ld},
      {{"ln"}, "ln <address>", "nearest symbols", "", run_kind::any, &session::cmd_ln},
      {{"x"}, "x <module>!<pattern>", "find symbols (* and ? are wildcards)", "", run_kind::any, &session::cmd_x},
      {{"?"},
       "? <expression>",
       "evaluate a MASM expression",
       "Numbers are hex (0n decimal, 0t octal, 0y binary); registers (@rax), module!symbol, poi(), by(), wo(), "
       "dwo(), qwo(), + - * / % << >> & | ^ and comparisons.",
       run_kind::any,
       &session::cmd_evaluate},
      {{"~"},
       "~ | ~<n>s",
       "list threads / vCPUs, or make number n current",
       "On a Windows kernel each processor's line shows its current thread (KiProcessorBlock[n]->CurrentThread): "
       "ETHREAD, Cid, EPROCESS and image.",
       run_kind::any,
       &session::cmd_threads},
      {{"rdmsr"},
       "rdmsr <msr>",
       "read a model-specific register (kd, kdnet)",
       "",
       run_kind::halted,
       &session::cmd_backend},
      {{"wrmsr"},
       "wrmsr <msr> <value>",
       "write a model-specific register (kd, kdnet)",
       "",
       run_kind::halted,
       &session::cmd_backend},
      {{".reboot"},
       ".reboot",
       "reboot the target and wait for it to come back (kd, kdnet)",
       "The stop after the reboot is rendered; the trailer says 'rediscovery pending' until the next stop.",
       run_kind::resume,
       &session::cmd_backend},
      {{".crash"},
       ".crash",
       "make the target bugcheck (0xE2) and wait for the stop (kd, kdnet)",
       "",
       run_kind::resume,
       &session::cmd_backend},
      {{"vertarget", "version"},
       "vertarget",
       "the target's version: a Windows kernel's build and base, how it was found, its KDBG; kd/kdnet's version block",
       "",
       run_kind::halted,
       &session::cmd_backend},
      {{".kdstats"},
       ".kdstats",
       "the debug link's packet counters (kd, kdnet)",
       "",
       run_kind::any,
       &session::cmd_backend},
      {{".dump"},
       ".dump /f <file>",
       "write a full (type 1) Windows crash dump of the target's physical memory",
       "RAM comes from the backend's ram hint, else every readable 2 MiB below 4 GiB; unreadable pages are "
       "saved as zeros and counted. Like the memory commands it reads live when memory comes from the host (the "
       "memory backend); halt the target first for a consistent dump. The dump backend opens the file again: "
       "open {backend:\"dump\", connect:FILE}.",
       run_kind::any,
       &session::cmd_dump},
      {{"sx"},
       "sx",
       "list the signal filters (break and handling status of each POSIX signal)",
       "The defaults are gdb's: SIGINT and SIGTRAP are the debugger's own and handled; SIGALRM, SIGCHLD, SIGURG, "
       "SIGIO, SIGVTALRM, SIGPROF and SIGWINCH are ignored (delivered to the program without a stop or a word); "
       "every other signal breaks and is not handled (g delivers it).",
       run_kind::any,
       &session::cmd_sx},
      {{"sxe", "sxd", "sxn", "sxi"},
       "sx{e|d|n|i} [-h] <signal | *> [signal...]",
       "set what a signal does when it arrives: sxe break, sxd second-chance break, sxn output, sxi ignore",
       "Signals by name (SIGUSR1, usr1) or decimal number (10); * is every signal but SIGINT and SIGTRAP. sxe stops "
       "before the program receives the signal. sxd, sxn and sxi do not stop: the signal is delivered at once, in "
       "the background; sxd and sxn put a notice at the top of the next result, sxi says nothing. (A signal has "
       "no second chance the debugger sees before the program acts on it, so sxd notifies as sxn does; a signal "
       "that ends the program is reported as its exit.) With -h the handling status changes instead: sxe -h marks "
       "it handled (resuming drops it unless gn), sxd -h not handled (resuming delivers it unless gh).",
       run_kind::any,
       &session::cmd_sx},
      {{"sxr"}, "sxr", "reset every signal filter to gdb's defaults", "", run_kind::any, &session::cmd_sx},
      {{"help", ".help"},
       "help | .help <command>",
       "list commands, or show one in full",
       "",
       run_kind::any,
       &session::cmd_help},
  };
  return table;
}

const command_spec* find_command(std::string_view name) {
  for (const auto& spec : command_table()) {
    if (std::find(spec.names.begin(), spec.names.end(), name) != spec.names.end()) return &spec;
  }
  return nullptr;
}

absl::StatusOr<std::string> render_help(std::string_view topic_text) {
  std::string topic(trim(topic_text));
  for (char& c : topic) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!topic.empty()) {
    const command_spec* spec = find_command(topic);
    if (spec == nullptr) return absl::NotFoundError("there is no command '" + topic + "'; `help` lists them");
    std::string out = "Usage: " + spec->usage + "\n  " + spec->summary + "\n";
    if (!spec->details.empty()) out += "  " + spec->details + "\n";
    static const char* const kKinds[] = {"runs in any state", "needs a halted target (waits for the stop)",
                                         "resumes the target and waits for the next stop",
                                         "only while the target runs"};
    out += "  (" + std::string(kKinds[static_cast<int>(spec->kind)]) + ")\n";
    return out;
  }
  std::string out = "Commands (`.help <command>` shows one in full; `;` separates commands; numbers are hex):\n";
  for (const auto& spec : command_table()) {
    std::string names;
    for (const auto& n : spec.names) names += (names.empty() ? "" : ", ") + n;
    if (names.size() < 30) names.resize(30, ' ');
    out += "  " + names + " " + spec.summary + "\n";
  }
  return out;
}

}  // namespace toolhost::debugger
