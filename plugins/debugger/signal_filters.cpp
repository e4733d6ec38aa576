#include "signal_filters.hpp"

#include "command_line.hpp"

namespace toolhost::debugger {

namespace sig = toolhost::signals;

const char* status_word(break_status s) {
  switch (s) {
    case break_status::stop: return "break";
    case break_status::second_chance: return "second-chance break";
    case break_status::notify: return "output";
    case break_status::ignore: return "ignore";
  }
  return "";
}

void signal_filters::reset() {
  for (const auto& s : sig::all()) {
    signal_filter& f = filters_[s.number];
    f.on_arrival = s.stop ? break_status::stop : s.print ? break_status::notify : break_status::ignore;
    f.handled = !s.pass;
  }
}

const signal_filter& signal_filters::of(int signal) const {
  static const signal_filter kUnknown{};
  if (signal < 1 || signal >= static_cast<int>(filters_.size())) return kUnknown;
  return filters_[signal];
}

bool signal_filters::notifies(int signal) const {
  const auto s = of(signal).on_arrival;
  return s == break_status::notify || s == break_status::second_chance;
}

absl::StatusOr<std::string> signal_filters::apply(std::string_view command, std::string_view args) {
  bool handling = false;
  std::vector<int> chosen;
  size_t pos = 0;
  for (;;) {
    skip_blanks(args, pos);
    if (pos >= args.size()) break;
    const std::string word = take_word(args, pos);
    if (word == "-h") {
      handling = true;
    } else if (word == "*") {
      // Every signal but the two the debugger itself runs on.
      for (const auto& s : sig::all()) {
        if (s.number != 2 && s.number != 5) chosen.push_back(s.number);
      }
    } else if (!word.empty() && word[0] == '-') {
      return absl::InvalidArgumentError("'" + word + "' is not an option of " + std::string(command) +
                                        " (-h sets the handling status)");
    } else if (const sig::signal_info* s = sig::by_name(word)) {
      chosen.push_back(s->number);
    } else {
      return absl::InvalidArgumentError("'" + word +
                                        "' is not a signal; name one (SIGUSR1, usr1) or give its decimal "
                                        "number (10); `sx` lists them");
    }
  }
  if (chosen.empty()) return absl::InvalidArgumentError(std::string(command) + " needs a signal, e.g. SIGUSR1");
  std::string names;
  for (size_t i = 0; i < chosen.size() && i < 8; ++i) names += (i ? ", " : "") + sig::name_of(chosen[i]);
  if (chosen.size() > 8) names += " and " + std::to_string(chosen.size() - 8) + " more";
  if (handling) {
    // WinDbg: sxe -h marks the event handled, sxd -h not handled.
    if (command != "sxe" && command != "sxd") {
      return absl::InvalidArgumentError(
          "-h goes with sxe (handled: resuming keeps the signal from the program) or "
          "sxd (not handled: resuming delivers it)");
    }
    const bool handled = command == "sxe";
    for (int n : chosen) filters_[n].handled = handled;
    return names + (handled ? ": handled (g and gh resume without it; gn delivers it)"
                            : ": not handled (g and gn deliver it to the program; gh resumes without it)");
  }
  const break_status status = command == "sxe"   ? break_status::stop
                              : command == "sxd" ? break_status::second_chance
                              : command == "sxn" ? break_status::notify
                                                 : break_status::ignore;
  for (int n : chosen) filters_[n].on_arrival = status;
  return names + ": " + status_word(status);
}

std::string signal_filters::listing() const {
  std::string out;
  for (const auto& s : sig::all()) {
    const signal_filter& f = filters_[s.number];
    std::string head = "  " + std::string(s.name) + " (" + std::to_string(s.number) + ")";
    if (head.size() < 18) head.resize(18, ' ');
    out += head + "- " + s.description + " - " + status_word(f.on_arrival) + " - " +
           (f.handled ? "handled" : "not handled") + "\n";
  }
  return out;
}

std::vector<int32_t> signal_filters::background() const {
  std::vector<int32_t> out;
  for (const auto& s : sig::all()) {
    const signal_filter& f = filters_[s.number];
    if (f.on_arrival == break_status::ignore && !f.handled) out.push_back(s.number);
  }
  return out;
}

}  // namespace toolhost::debugger
