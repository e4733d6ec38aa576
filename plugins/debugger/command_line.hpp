// Splitting a REPL line: ';' between commands (not inside quotes), the command name, and
// WinDbg's argument forms (ranges "addr L count" / "addr end", quoted strings, /options).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace toolhost::debugger {

// "break; bp x; g" -> {"break", "bp x", "g"}; blanks trimmed, empty pieces dropped.
std::vector<std::string> split_commands(std::string_view line);

struct parsed_command {
  std::string name;  // lower case: "db", "~", ".help", "bp"
  std::string args;  // the rest, trimmed
};

// Splits a command into its name and arguments. WinDbg names run together with arguments in
// a few forms: "~1s" is "~" with "1s", "dq@rsp" is not supported (use a blank).
parsed_command parse_command(std::string_view command);

std::string_view trim(std::string_view s);

// A quoted string starting at `pos` ("..." with \" and \\ escapes); advances `pos`.
std::optional<std::string> take_quoted(std::string_view text, size_t& pos);
// The next blank-separated word from `pos`; advances `pos` past trailing blanks.
std::string take_word(std::string_view text, size_t& pos);
void skip_blanks(std::string_view text, size_t& pos);

}  // namespace toolhost::debugger
