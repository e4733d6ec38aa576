// The host's own log: one line per event on stderr, never on stdout (which belongs to the
// protocol on stdio).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace toolhost::log {

enum class level { debug = 0, info = 1, warning = 2, error = 3 };

// Lines below `min` are dropped. Default: info.
void set_level(level min);
level current_level();

// Writes "toolhost: <component>: <message>\n" to stderr, atomically with respect to other
// lines. [any-thread]
void write(level lvl, std::string_view component, std::string_view message);

inline void debug(std::string_view component, std::string_view message) { write(level::debug, component, message); }
inline void info(std::string_view component, std::string_view message) { write(level::info, component, message); }
inline void warning(std::string_view component, std::string_view message) { write(level::warning, component, message); }
inline void error(std::string_view component, std::string_view message) { write(level::error, component, message); }

// An event that can repeat thousands of times a second (a refused connection, an evicted
// session): the first is logged at once, later ones are counted, and at most one line per
// `interval` reports how many there were, so a flood cannot grow the log per request.
// [any-thread]
class repeated {
 public:
  repeated(level lvl, std::string component, std::chrono::steady_clock::duration interval);
  // One occurrence; `what` describes it ("refused a connection: ..."), and the summary line
  // repeats the latest `what` with the count.
  void note(std::string_view what);
  // Logs the summary of what was counted when the interval has passed (call it now and then,
  // so that the last of a burst is reported too).
  void flush();
  uint64_t total() const;

 private:
  void report_locked(std::chrono::steady_clock::time_point now);

  const level level_;
  const std::string component_;
  const std::chrono::steady_clock::duration interval_;
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point last_line_{};
  std::string latest_;
  uint64_t pending_ = 0;  // counted since the last line
  uint64_t total_ = 0;
};

}  // namespace toolhost::log
