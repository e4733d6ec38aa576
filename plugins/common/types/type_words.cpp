// WinDbg's words for types ("Uint4B", "Ptr64 Void", "[15] UChar") and the small helpers on
// the model.
#include <algorithm>
#include <cctype>

#include "toolhost/types/dt.hpp"

namespace toolhost::types {

type_id strip_aliases(const type_table& table, type_id id) {
  for (int i = 0; i < 64 && id != kNoType; ++i) {
    const type& t = table.get(id);
    if (t.k != kind::alias) return id;
    id = t.target;
  }
  return id;
}

bool wildcard_match(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  auto same = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || same(pattern[p], text[t]))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

std::string base_word(const type& t) {
  switch (t.enc) {
    case encoding::none: return "Void";
    case encoding::boolean: return "Bool";
    case encoding::signed_char: return "Char";
    case encoding::unsigned_char: return "UChar";
    case encoding::wide_char: return "Wchar";
    case encoding::floating: return "Float";
    case encoding::signed_integer:
      if (t.size == 1) return "Char";
      return "Int" + std::to_string(t.size) + "B";
    case encoding::unsigned_integer:
      if (t.size == 1) return "UChar";
      return "Uint" + std::to_string(t.size) + "B";
  }
  return "Void";
}

// The C spelling WinDbg uses for a function pointer's return type ("long", "void").
std::string c_word(const type_table& table, type_id id) {
  id = strip_aliases(table, id);
  if (id == kNoType) return "void";
  const type& t = table.get(id);
  switch (t.k) {
    case kind::base:
      switch (t.enc) {
        case encoding::none: return "void";
        case encoding::boolean: return "bool";
        case encoding::signed_char: return "char";
        case encoding::unsigned_char: return "unsigned char";
        case encoding::wide_char: return "wchar_t";
        case encoding::floating: return t.size == 4 ? "float" : "double";
        case encoding::signed_integer:
          return t.size == 1 ? "char" : t.size == 2 ? "short" : t.size == 4 ? "long" : "int64";
        case encoding::unsigned_integer:
          return t.size == 1   ? "unsigned char"
                 : t.size == 2 ? "unsigned short"
                 : t.size == 4 ? "unsigned long"
                               : "unsigned int64";
      }
      return "void";
    case kind::pointer: return c_word(table, t.target) + " *";
    default: return t.name.empty() ? "<unnamed-tag>" : t.name;
  }
}

}  // namespace

std::string type_word(const type_table& table, type_id id) {
  id = strip_aliases(table, id);
  if (id == kNoType) return "Void";
  const type& t = table.get(id);
  switch (t.k) {
    case kind::base: return base_word(t);
    case kind::pointer: {
      const std::string ptr = table.pointer_size() == 4 ? "Ptr32" : "Ptr64";
      const type_id target = strip_aliases(table, t.target);
      if (target != kNoType && table.get(target).k == kind::function) {
        return ptr + "     " + c_word(table, table.get(target).target);
      }
      return ptr + " " + type_word(table, t.target);
    }
    case kind::array: return "[" + std::to_string(t.count) + "] " + type_word(table, t.target);
    case kind::function: return c_word(table, t.target);
    case kind::structure:
    case kind::union_:
    case kind::enumeration:
    case kind::alias: return t.name.empty() ? "<unnamed-tag>" : t.name;
  }
  return "Void";
}

std::vector<std::string> matching_type_names(const type_table& table, std::string_view pattern) {
  std::vector<std::string> out;
  table.for_each_named([&](std::string_view name, type_id) {
    if (wildcard_match(pattern, name)) out.emplace_back(name);
    return true;
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

std::string c_type_name_at(const type_table& table, type_id id, int depth) {
  if (id == kNoType) return "void";
  if (depth > 16) return "...";  // a type that reaches itself through pointers in a bad file
  const type& t = table.get(id);
  auto tagged = [&](const char* tag) { return std::string(tag) + (t.name.empty() ? "<unnamed-tag>" : t.name); };
  switch (t.k) {
    case kind::alias: return t.name;
    case kind::base: return t.name.empty() ? c_word(table, id) : t.name;
    case kind::pointer: {
      const type_id target = strip_aliases(table, t.target);
      if (target != kNoType && table.get(target).k == kind::function) {
        return c_type_name_at(table, table.get(target).target, depth + 1) + " (*)()";
      }
      return c_type_name_at(table, t.target, depth + 1) + " *";
    }
    case kind::array: return c_type_name_at(table, t.target, depth + 1) + " [" + std::to_string(t.count) + "]";
    case kind::structure: return tagged("struct ");
    case kind::union_: return tagged("union ");
    case kind::enumeration: return tagged("enum ");
    case kind::function: return c_type_name_at(table, t.target, depth + 1) + " ()";
  }
  return "void";
}

}  // namespace

std::string c_type_name(const type_table& table, type_id id) { return c_type_name_at(table, id, 0); }

}  // namespace toolhost::types
