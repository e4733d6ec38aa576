// What the debugger does with each POSIX signal a process target reports, in WinDbg's terms:
// the break status (sxe: stop; sxd: no first-chance stop; sxn: a notice only; sxi: nothing)
// and the handling status (handled: the debugger keeps the signal; not handled: `g` delivers
// it to the program). The defaults are gdb's table (`info signals`).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

#include <toolhost/signals/posix_signals.hpp>

namespace toolhost::debugger {

enum class break_status { stop, second_chance, notify, ignore };

struct signal_filter {
  break_status on_arrival = break_status::stop;
  bool handled = false;  // true: resuming does not deliver it (gh's choice by default)
};

class signal_filters {
 public:
  signal_filters() { reset(); }

  // gdb's defaults for every signal.
  void reset();
  const signal_filter& of(int signal) const;
  bool stops(int signal) const { return of(signal).on_arrival == break_status::stop; }
  bool notifies(int signal) const;
  bool delivers(int signal) const { return !of(signal).handled; }

  // Parses the arguments of sxe/sxd/sxn/sxi ("[-h] SIGUSR1 alrm 14 *") and applies them;
  // the sentence it returns says what changed.
  absl::StatusOr<std::string> apply(std::string_view command, std::string_view args);
  // The `sx` listing.
  std::string listing() const;
  // The signals a backend may deliver by itself: ignored and not handled.
  std::vector<int32_t> background() const;

 private:
  std::array<signal_filter, 65> filters_{};
};

// "break", "second-chance break", "output", "ignore": the words of WinDbg's `sx`.
const char* status_word(break_status s);

}  // namespace toolhost::debugger
