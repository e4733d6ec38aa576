// The host's own log: one line per event on stderr, never on stdout (which belongs to the
// protocol on stdio).
#pragma once

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

}  // namespace toolhost::log
