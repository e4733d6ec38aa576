// WinDbg's words for the members of a PDB's types, worked out from `llvm-pdbutil dump -types`
// alone: the expected side of the dt tests (pdb_test.cpp, the debugger's symbol tests).
#pragma once

#include <regex>
#include <string>
#include <vector>

#include <absl/strings/str_format.h>

#include "oracle.hpp"

namespace toolhost::test::windows {

struct expected_member {
  std::string name;
  uint64_t offset = 0;
  std::string word;  // "Uint4B", "Pos 1, 3 Bits", "Ptr64 _LIST_ENTRY"
};

class type_oracle {
 public:
  explicit type_oracle(const std::string& pdb) : records_(pdb_type_records(pdb)) {}

  const std::map<uint32_t, pdb_type_record>& records() const { return records_; }

  // Named, complete structures and unions (not the nested "<unnamed-tag>" ones).
  std::vector<std::pair<uint32_t, std::string>> structures() const {
    std::vector<std::pair<uint32_t, std::string>> out;
    for (const auto& [ti, r] : records_) {
      if ((r.kind == "LF_STRUCTURE" || r.kind == "LF_UNION") && !is_forward(r) &&
          r.name.find("<unnamed-tag>") == std::string::npos) {
        out.emplace_back(ti, r.name);
      }
    }
    return out;
  }

  std::vector<std::pair<uint32_t, std::string>> enumerations() const {
    std::vector<std::pair<uint32_t, std::string>> out;
    for (const auto& [ti, r] : records_) {
      if (r.kind == "LF_ENUM") out.emplace_back(ti, r.name);
    }
    return out;
  }

  std::vector<expected_member> members(uint32_t ti) const {
    std::vector<expected_member> out;
    static const std::regex member(
        R"(- LF_MEMBER \[name = `([^`]*)`, Type = (0x[0-9A-Fa-f]+(?: \([^)]*\))?), offset = (\d+),)");
    for (const std::string& line : records_.at(field_list(ti)).lines) {
      std::smatch m;
      if (!std::regex_search(line, m, member)) continue;
      out.push_back({m[1], std::stoull(m[3]), member_word(m[2])});
    }
    return out;
  }

  // (name, value) of an enumeration, values as its underlying type reads them.
  std::vector<std::pair<std::string, int64_t>> enumerators(uint32_t ti) const {
    std::vector<std::pair<std::string, int64_t>> out;
    static const std::regex e(R"(- LF_ENUMERATE \[(\S+) = (\d+)\])");
    const uint64_t size = size_of(value_of(records_.at(ti), "underlying type: "));
    const bool is_signed = simple_name(value_of(records_.at(ti), "underlying type: ")).rfind("unsigned", 0) != 0;
    for (const std::string& line : records_.at(field_list(ti)).lines) {
      std::smatch m;
      if (!std::regex_search(line, m, e)) continue;
      uint64_t v = std::stoull(m[2]);
      int64_t value = static_cast<int64_t>(v);
      if (is_signed && size < 8 && (v >> (size * 8 - 1)) & 1) value = static_cast<int64_t>(v | (~0ull << (size * 8)));
      out.emplace_back(m[1], value);
    }
    return out;
  }

  uint64_t size_of(const std::string& ref) const {
    if (is_simple(ref)) {
      const std::string n = simple_name(ref);
      if (!n.empty() && n.back() == '*') return 8;
      static const std::map<std::string, uint64_t> sizes = {{"void", 0},          {"char", 1},
                                                            {"signed char", 1},   {"unsigned char", 1},
                                                            {"short", 2},         {"unsigned short", 2},
                                                            {"wchar_t", 2},       {"long", 4},
                                                            {"unsigned long", 4}, {"int", 4},
                                                            {"unsigned", 4},      {"float", 4},
                                                            {"__int64", 8},       {"unsigned __int64", 8},
                                                            {"double", 8},        {"bool", 1}};
      return sizes.at(n);
    }
    const auto& r = records_.at(full(index_of(ref)));
    if (r.kind == "LF_POINTER") return value_of(r, "kind = ") == "ptr64" ? 8 : 4;
    if (r.kind == "LF_ARRAY") return std::stoull(value_of(r, "size: "));
    if (r.kind == "LF_MODIFIER") return size_of(value_of(r, "referent = "));
    if (r.kind == "LF_ENUM") return size_of(value_of(r, "underlying type: "));
    return std::stoull(value_of(r, "sizeof "));
  }

  std::string word(const std::string& ref) const {
    if (is_simple(ref)) {
      std::string n = simple_name(ref);
      if (!n.empty() && n.back() == '*') return "Ptr64 " + word_of_simple(n.substr(0, n.size() - 1));
      return word_of_simple(n);
    }
    const auto& r = records_.at(full(index_of(ref)));
    if (r.kind == "LF_POINTER") {
      const std::string referent = value_of(r, "referent = ");
      const std::string ptr = value_of(r, "kind = ") == "ptr64" ? "Ptr64" : "Ptr32";
      if (!is_simple(referent) && records_.at(index_of(referent)).kind == "LF_PROCEDURE") {
        return ptr + "     " + simple_name(value_of(records_.at(index_of(referent)), "return type = "));
      }
      return ptr + " " + word(referent);
    }
    if (r.kind == "LF_ARRAY") {
      const std::string element = value_of(r, "element type: ");
      return absl::StrFormat("[%u] ", std::stoull(value_of(r, "size: ")) / size_of(element)) + word(element);
    }
    if (r.kind == "LF_MODIFIER") return word(value_of(r, "referent = "));
    return r.name;
  }

 private:
  static bool is_forward(const pdb_type_record& r) {
    for (const auto& l : r.lines) {
      if (l.find("forward ref") != std::string::npos) return true;
    }
    return false;
  }
  static bool is_simple(const std::string& ref) {
    return std::stoul(ref.substr(0, ref.find(' ')), nullptr, 16) < 0x1000;
  }
  static uint32_t index_of(const std::string& ref) {
    return static_cast<uint32_t>(std::stoul(ref.substr(0, ref.find(' ')), nullptr, 16));
  }
  // "0x0022 (unsigned long)" -> "unsigned long"
  static std::string simple_name(const std::string& ref) {
    const size_t open = ref.find('(');
    return open == std::string::npos ? "" : ref.substr(open + 1, ref.rfind(')') - open - 1);
  }
  static std::string word_of_simple(const std::string& n) {
    static const std::map<std::string, std::string> words = {{"void", "Void"},
                                                             {"char", "Char"},
                                                             {"signed char", "Char"},
                                                             {"unsigned char", "UChar"},
                                                             {"short", "Int2B"},
                                                             {"unsigned short", "Uint2B"},
                                                             {"wchar_t", "Wchar"},
                                                             {"long", "Int4B"},
                                                             {"unsigned long", "Uint4B"},
                                                             {"int", "Int4B"},
                                                             {"unsigned", "Uint4B"},
                                                             {"__int64", "Int8B"},
                                                             {"unsigned __int64", "Uint8B"},
                                                             {"float", "Float"},
                                                             {"double", "Float"},
                                                             {"bool", "Bool"}};
    return words.at(n);
  }
  // The text after `key` on the record's lines, up to the next ',' ("0x0022 (unsigned long)").
  static std::string value_of(const pdb_type_record& r, const std::string& key) {
    for (const auto& l : r.lines) {
      const size_t at = l.find(key);
      if (at == std::string::npos) continue;
      std::string v = l.substr(at + key.size());
      if (v.rfind("0x", 0) == 0 && v.find('(') != std::string::npos && v.find('(') < v.find(',')) {
        return v.substr(0, v.find(')') + 1);
      }
      return v.substr(0, v.find(','));
    }
    throw std::runtime_error("no '" + key + "' in the record of " + r.name);
  }
  // A forward reference's definition ("forward ref (-> 0x1021)").
  uint32_t full(uint32_t ti) const {
    static const std::regex to(R"(forward ref \(-> 0x([0-9A-Fa-f]+)\))");
    for (const auto& l : records_.at(ti).lines) {
      std::smatch m;
      if (std::regex_search(l, m, to)) return static_cast<uint32_t>(std::stoul(m[1], nullptr, 16));
    }
    return ti;
  }
  uint32_t field_list(uint32_t ti) const { return index_of(value_of(records_.at(ti), "field list: ")); }

  std::string member_word(const std::string& ref) const {
    if (!is_simple(ref) && records_.at(index_of(ref)).kind == "LF_BITFIELD") {
      const auto& r = records_.at(index_of(ref));
      const uint64_t bits = std::stoull(value_of(r, "# bits = "));
      return absl::StrFormat("Pos %u, %u Bit%s", std::stoull(value_of(r, "bit offset = ")), bits, bits == 1 ? "" : "s");
    }
    return word(ref);
  }

  std::map<uint32_t, pdb_type_record> records_;
};

// WinDbg's "   +0x%03x %-16s : %s" member line.
inline std::string dt_line(const expected_member& m, int depth = 0) {
  std::string name = m.name;
  if (name.size() < 16) name.resize(16, ' ');
  return std::string(3 + 3 * depth, ' ') + absl::StrFormat("+0x%03x ", m.offset) + name + " : " + m.word;
}

}  // namespace toolhost::test::windows
