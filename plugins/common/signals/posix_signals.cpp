#include "toolhost/signals/posix_signals.hpp"

#include <array>
#include <cctype>
#include <charconv>

namespace toolhost::signals {

namespace {

// Linux's numbers beside gdb's (gdb/signals.def; gdbserver translates on the wire). Real-time
// signals: Linux 32 is gdb's REALTIME_32 (77), 33-63 are 45-75, 64 is REALTIME_64 (78).
// SIGSTKFLT has no gdb number (gdbserver sends GDB_SIGNAL_UNKNOWN, 143).
constexpr signal_info kClassic[] = {
    {1, 1, "SIGHUP", "Hangup", true, true, true},
    {2, 2, "SIGINT", "Interrupt", true, true, false},
    {3, 3, "SIGQUIT", "Quit", true, true, true},
    {4, 4, "SIGILL", "Illegal instruction", true, true, true},
    {5, 5, "SIGTRAP", "Trace/breakpoint trap", true, true, false},
    {6, 6, "SIGABRT", "Aborted", true, true, true},
    {7, 10, "SIGBUS", "Bus error", true, true, true},
    {8, 8, "SIGFPE", "Arithmetic exception", true, true, true},
    {9, 9, "SIGKILL", "Killed", true, true, true},
    {10, 30, "SIGUSR1", "User defined signal 1", true, true, true},
    {11, 11, "SIGSEGV", "Segmentation fault", true, true, true},
    {12, 31, "SIGUSR2", "User defined signal 2", true, true, true},
    {13, 13, "SIGPIPE", "Broken pipe", true, true, true},
    {14, 14, "SIGALRM", "Alarm clock", false, false, true},
    {15, 15, "SIGTERM", "Terminated", true, true, true},
    {16, 0, "SIGSTKFLT", "Stack fault", true, true, true},
    {17, 20, "SIGCHLD", "Child status changed", false, false, true},
    {18, 19, "SIGCONT", "Continued", true, true, true},
    {19, 17, "SIGSTOP", "Stopped (signal)", true, true, true},
    {20, 18, "SIGTSTP", "Stopped (user)", true, true, true},
    {21, 21, "SIGTTIN", "Stopped (tty input)", true, true, true},
    {22, 22, "SIGTTOU", "Stopped (tty output)", true, true, true},
    {23, 16, "SIGURG", "Urgent I/O condition", false, false, true},
    {24, 24, "SIGXCPU", "CPU time limit exceeded", true, true, true},
    {25, 25, "SIGXFSZ", "File size limit exceeded", true, true, true},
    {26, 26, "SIGVTALRM", "Virtual timer expired", false, false, true},
    {27, 27, "SIGPROF", "Profiling timer expired", false, false, true},
    {28, 28, "SIGWINCH", "Window size changed", false, false, true},
    {29, 23, "SIGIO", "I/O possible", false, false, true},
    {30, 32, "SIGPWR", "Power fail/restart", true, true, true},
    {31, 12, "SIGSYS", "Bad system call", true, true, true},
};

constexpr int kMax = 64;

constexpr const char* kRealtimeNames[] = {
    "SIG32", "SIG33", "SIG34", "SIG35", "SIG36", "SIG37", "SIG38", "SIG39", "SIG40", "SIG41", "SIG42",
    "SIG43", "SIG44", "SIG45", "SIG46", "SIG47", "SIG48", "SIG49", "SIG50", "SIG51", "SIG52", "SIG53",
    "SIG54", "SIG55", "SIG56", "SIG57", "SIG58", "SIG59", "SIG60", "SIG61", "SIG62", "SIG63", "SIG64"};
constexpr const char* kRealtimeWords[] = {
    "Real-time event 32", "Real-time event 33", "Real-time event 34", "Real-time event 35", "Real-time event 36",
    "Real-time event 37", "Real-time event 38", "Real-time event 39", "Real-time event 40", "Real-time event 41",
    "Real-time event 42", "Real-time event 43", "Real-time event 44", "Real-time event 45", "Real-time event 46",
    "Real-time event 47", "Real-time event 48", "Real-time event 49", "Real-time event 50", "Real-time event 51",
    "Real-time event 52", "Real-time event 53", "Real-time event 54", "Real-time event 55", "Real-time event 56",
    "Real-time event 57", "Real-time event 58", "Real-time event 59", "Real-time event 60", "Real-time event 61",
    "Real-time event 62", "Real-time event 63", "Real-time event 64"};

constexpr int realtime_gdb_number(int n) { return n == 32 ? 77 : n == 64 ? 78 : n + 12; }

constexpr std::array<signal_info, kMax> build() {
  std::array<signal_info, kMax> table{};
  for (const auto& s : kClassic) table[s.number - 1] = s;
  for (int n = 32; n <= kMax; ++n) {
    table[n - 1] = {n, realtime_gdb_number(n), kRealtimeNames[n - 32], kRealtimeWords[n - 32], true, true, true};
  }
  return table;
}

constexpr std::array<signal_info, kMax> kTable = build();

bool equal_nocase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

}  // namespace

std::span<const signal_info> all() { return kTable; }

const signal_info* by_number(int number) {
  if (number < 1 || number > kMax) return nullptr;
  return &kTable[number - 1];
}

const signal_info* by_name(std::string_view name) {
  if (name.empty()) return nullptr;
  if (std::isdigit(static_cast<unsigned char>(name[0]))) {
    int n = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (ec != std::errc() || end != name.data() + name.size()) return nullptr;
    return by_number(n);
  }
  for (const auto& s : kTable) {
    const std::string_view full = s.name;
    if (equal_nocase(name, full) || equal_nocase(name, full.substr(3))) return &s;
  }
  if (equal_nocase(name, "SIGPOLL") || equal_nocase(name, "POLL")) return by_number(29);
  if (equal_nocase(name, "SIGIOT") || equal_nocase(name, "IOT")) return by_number(6);
  return nullptr;
}

std::optional<int> linux_from_gdb(int gdb_number) {
  if (gdb_number == 0) return 0;
  for (const auto& s : kTable) {
    if (s.gdb_number == gdb_number) return s.number;
  }
  return std::nullopt;
}

std::optional<int> gdb_from_linux(int number) {
  if (number == 0) return 0;
  const signal_info* s = by_number(number);
  if (s == nullptr || s->gdb_number == 0) return std::nullopt;
  return s->gdb_number;
}

std::string name_of(int number) {
  const signal_info* s = by_number(number);
  return s != nullptr ? s->name : "signal " + std::to_string(number);
}

bool has_fault_address(int number) { return number == 4 || number == 5 || number == 7 || number == 8 || number == 11; }

std::string code_text(int number, int si_code) {
  // Codes any signal may carry (asm-generic/siginfo.h).
  switch (si_code) {
    case 0: return "SI_USER (sent by kill)";
    case 0x80: return "SI_KERNEL (sent by the kernel)";
    case -1: return "SI_QUEUE (sent by sigqueue)";
    case -2: return "SI_TIMER (a POSIX timer expired)";
    case -3: return "SI_MESGQ (a message arrived)";
    case -4: return "SI_ASYNCIO (asynchronous I/O completed)";
    case -5: return "SI_SIGIO (queued SIGIO)";
    case -6: return "SI_TKILL (sent by tkill or raise)";
    default: break;
  }
  struct entry {
    int signal, code;
    const char* text;
  };
  static constexpr entry kCodes[] = {
      {11, 1, "SEGV_MAPERR (address not mapped)"},
      {11, 2, "SEGV_ACCERR (invalid permissions for mapped object)"},
      {11, 3, "SEGV_BNDERR (failed address bound checks)"},
      {11, 4, "SEGV_PKUERR (access denied by memory protection keys)"},
      {7, 1, "BUS_ADRALN (invalid address alignment)"},
      {7, 2, "BUS_ADRERR (nonexistent physical address)"},
      {7, 3, "BUS_OBJERR (object-specific hardware error)"},
      {7, 4, "BUS_MCEERR_AR (hardware memory error consumed)"},
      {7, 5, "BUS_MCEERR_AO (hardware memory error detected)"},
      {4, 1, "ILL_ILLOPC (illegal opcode)"},
      {4, 2, "ILL_ILLOPN (illegal operand)"},
      {4, 3, "ILL_ILLADR (illegal addressing mode)"},
      {4, 4, "ILL_ILLTRP (illegal trap)"},
      {4, 5, "ILL_PRVOPC (privileged opcode)"},
      {4, 6, "ILL_PRVREG (privileged register)"},
      {4, 7, "ILL_COPROC (coprocessor error)"},
      {4, 8, "ILL_BADSTK (internal stack error)"},
      {8, 1, "FPE_INTDIV (integer divide by zero)"},
      {8, 2, "FPE_INTOVF (integer overflow)"},
      {8, 3, "FPE_FLTDIV (floating-point divide by zero)"},
      {8, 4, "FPE_FLTOVF (floating-point overflow)"},
      {8, 5, "FPE_FLTUND (floating-point underflow)"},
      {8, 6, "FPE_FLTRES (floating-point inexact result)"},
      {8, 7, "FPE_FLTINV (floating-point invalid operation)"},
      {8, 8, "FPE_FLTSUB (subscript out of range)"},
      {5, 1, "TRAP_BRKPT (process breakpoint)"},
      {5, 2, "TRAP_TRACE (process trace trap)"},
      {5, 4, "TRAP_HWBKPT (hardware breakpoint or watchpoint)"},
      {17, 1, "CLD_EXITED (child has exited)"},
      {17, 2, "CLD_KILLED (child was killed)"},
      {17, 3, "CLD_DUMPED (child terminated abnormally)"},
      {17, 4, "CLD_TRAPPED (traced child has trapped)"},
      {17, 5, "CLD_STOPPED (child has stopped)"},
      {17, 6, "CLD_CONTINUED (stopped child has continued)"},
      {29, 1, "POLL_IN (data input available)"},
      {29, 2, "POLL_OUT (output buffers available)"},
      {29, 3, "POLL_MSG (input message available)"},
      {29, 4, "POLL_ERR (I/O error)"},
      {29, 5, "POLL_PRI (high priority input available)"},
      {29, 6, "POLL_HUP (device disconnected)"},
  };
  for (const auto& e : kCodes) {
    if (e.signal == number && e.code == si_code) return e.text;
  }
  return "";
}

}  // namespace toolhost::signals
