#include "command_line.hpp"

#include <cctype>

namespace toolhost::debugger {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_commands(std::string_view line) {
  std::vector<std::string> out;
  std::string current;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '\\' && i + 1 < line.size()) {
      current += c;
      current += line[++i];
      continue;
    }
    if (c == '"') quoted = !quoted;
    if (c == ';' && !quoted) {
      if (auto t = trim(current); !t.empty()) out.emplace_back(t);
      current.clear();
      continue;
    }
    current += c;
  }
  if (auto t = trim(current); !t.empty()) out.emplace_back(t);
  return out;
}

parsed_command parse_command(std::string_view command) {
  command = trim(command);
  parsed_command out;
  if (command.empty()) return out;
  size_t end = 0;
  if (command[0] == '~' || command[0] == '?') {
    end = 1;  // "~1s", "?rax" run on from the symbol
  } else {
    while (end < command.size() && !std::isspace(static_cast<unsigned char>(command[end]))) {
      const char c = command[end];
      // "bp/1" and "r rax=1" style: a '/' ends the name; letters, digits, '.', '!' belong to it.
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '!' || c == '_')) break;
      ++end;
    }
    if (end == 0) end = 1;
  }
  out.name = std::string(command.substr(0, end));
  for (char& c : out.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out.args = std::string(trim(command.substr(end)));
  return out;
}

void skip_blanks(std::string_view text, size_t& pos) {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
}

std::optional<std::string> take_quoted(std::string_view text, size_t& pos) {
  skip_blanks(text, pos);
  if (pos >= text.size() || text[pos] != '"') return std::nullopt;
  std::string out;
  for (size_t i = pos + 1; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      out += text[++i];
    } else if (text[i] == '"') {
      pos = i + 1;
      skip_blanks(text, pos);
      return out;
    } else {
      out += text[i];
    }
  }
  return std::nullopt;
}

std::string take_word(std::string_view text, size_t& pos) {
  skip_blanks(text, pos);
  const size_t start = pos;
  while (pos < text.size() && !std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  std::string out(text.substr(start, pos - start));
  skip_blanks(text, pos);
  return out;
}

}  // namespace toolhost::debugger
