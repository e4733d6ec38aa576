// The debugger's breakpoint list: user breakpoints with WinDbg ids, pass counts, conditions
// and one-shot flags, and the temporary ones that `g addr`, `p`, `gu` and `pa` plant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <toolhost/debug_target.h>

namespace toolhost::debugger {

struct breakpoint {
  int id = 0;
  toolhost_dt_breakpoint_type_t type = TOOLHOST_DT_BP_SOFTWARE;
  uint64_t address = 0;
  uint32_t length = 1;
  bool enabled = true;
  bool one_shot = false;  // bp /1: deleted when hit
  uint64_t passes = 1;    // the hit that stops (WinDbg's pass count)
  uint64_t passes_left = 1;
  std::string condition;   // stop only when this MASM expression is non-zero
  std::string expression;  // what the user typed for the address
  uint64_t hits = 0;
  // bp /p <eprocess>, /t <ethread> (Windows kernels): stops only there; hits elsewhere are
  // resumed at once, in the background too, and counted in `foreign_hits`.
  uint64_t process = 0, thread = 0;
  uint64_t foreign_hits = 0;
  // bu: the expression is evaluated again whenever the module list changes (a module loaded,
  // moved or went away); until it resolves the breakpoint is set nowhere.
  bool deferred = false;
  bool resolved = true;
  bool live() const { return enabled && resolved; }
};

struct temporary_breakpoint {
  uint64_t address = 0;
  std::optional<uint64_t> min_sp;  // counts only when sp >= min_sp (returns, not recursion)
};

// Parses "0 2-4 *" into ids from `existing`; an error sentence on bad input.
std::optional<std::vector<int>> parse_id_list(const std::string& text, const std::vector<breakpoint>& existing,
                                              std::string& error);

}  // namespace toolhost::debugger
