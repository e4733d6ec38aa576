// toolhost::signals: the POSIX signals of a Linux target, by name, by the number Linux gives
// them and by the number the GDB remote protocol gives them on the wire (gdb's own enum, in
// which SIGUSR1 is 30, not 10), with gdb's default handling of each.
//
//   auto* s = toolhost::signals::by_name("usr1");      // SIGUSR1, SIGusr1, usr1, 10
//   toolhost::signals::linux_from_gdb(0x1e) == 10;
//
// The tables are constant; every function may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace toolhost::signals {

struct signal_info {
  int number;               // Linux's (x86, ARM, AArch64, RISC-V: the generic numbering)
  int gdb_number;           // on the GDB remote protocol's wire; 0 when gdb has none
  const char* name;         // "SIGUSR1"
  const char* description;  // gdb's words: "User defined signal 1"
  // gdb's defaults (`info signals`): stop and print when it arrives, pass it to the program.
  bool stop;
  bool print;
  bool pass;
};

// Every signal Linux numbers (1-64), in order.
std::span<const signal_info> all();
// By Linux number; nullptr outside 1-64.
const signal_info* by_number(int number);
// "SIGUSR1", "sigusr1", "USR1" or a decimal number ("10"); nullptr when none matches.
const signal_info* by_name(std::string_view name);

// Wire numbering to Linux numbering and back; nullopt for numbers the other side lacks.
std::optional<int> linux_from_gdb(int gdb_number);
std::optional<int> gdb_from_linux(int number);

// "SIGUSR1" for a Linux number, "signal 70" for one outside the table.
std::string name_of(int number);

// Faults whose siginfo carries the faulting address (si_addr): SIGSEGV, SIGBUS, SIGILL, SIGFPE,
// SIGTRAP.
bool has_fault_address(int number);

// The meaning of a siginfo si_code for `number`: "SEGV_MAPERR (address not mapped)",
// "SI_TKILL (sent by tkill or raise)"; "" for a code this table does not know.
std::string code_text(int number, int si_code);

}  // namespace toolhost::signals
