// Test helper: gdb's `ptype /o` as the oracle for dt's layout of a type. gdb_layout parses what
// gdb prints; dt_fields reads dt's JSON the same way (absolute bit offsets, sizes, nested members
// where gdb expands them), so the two compare with ==; check_dt_layout does it for one type.
#pragma once

#include <catch2/catch.hpp>

#include <cstdio>
#include <optional>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "gdb_oracle.hpp"

namespace toolhost::testing {

// One member as a layout shows it: offsets in bits from the start of the outermost type.
struct field {
  std::string name;
  uint64_t bit_offset = 0;
  uint64_t size = 0;
  std::vector<field> children;  // only where gdb expands the member (a struct or union typed directly)
};

inline std::ostream& operator<<(std::ostream& o, const std::vector<field>& fields) {
  for (const auto& f : fields) {
    o << f.name << "@" << f.bit_offset / 8 << ":" << f.bit_offset % 8 << "/" << f.size;
    if (!f.children.empty()) o << "{" << f.children << "}";
    o << " ";
  }
  return o;
}

// The member's name in a C declaration ("int (*handler)(int, char *)", "int matrix[2][3]",
// "unsigned int ihl : 4").
inline std::string declared_name(std::string decl) {
  std::smatch m;
  if (std::regex_search(decl, m, std::regex(R"(\(\*\s*(\w+)\))"))) return m[1];
  decl = std::regex_replace(decl, std::regex(R"(\s*:\s*\d+$)"), "");
  decl = std::regex_replace(decl, std::regex(R"((\[\d*\])+$)"), "");
  if (std::regex_search(decl, m, std::regex(R"((\w+)$)"))) return m[1];
  return "";
}

// Anonymous structs and unions read as their parent's members (as dt shows them).
inline std::vector<field> flatten(std::vector<field> in) {
  std::vector<field> out;
  for (auto& f : in) {
    f.children = flatten(std::move(f.children));
    if (f.name.empty()) {
      for (auto& c : f.children) out.push_back(std::move(c));
    } else {
      out.push_back(std::move(f));
    }
  }
  return out;
}

struct layout {
  uint64_t size = 0;
  std::vector<field> fields;
};

// gdb's `ptype /o TYPE`: member lines "/* 4: 0 | 4 */ unsigned int version : 4;", union members
// without an offset ("/*  4 */ int i;", at the union's offset), nested types opened by "... {" and
// closed by "} name;", and "/* total size (bytes): 16 */".
inline layout gdb_layout(const std::string& program, const std::string& type) {
  const std::string out = toolhost::testing::gdb_batch(program, {"ptype /o " + type});
  INFO(out);
  const std::regex member(R"(^/\*\s+(?:(\d+)(?:\s*:\s*(\d+))?\s+\|)?\s+(\d+)\s+\*/\s+(.*)$)");
  const std::regex total(R"(/\* total size \(bytes\):\s+(\d+) \*/)");
  const std::regex close(R"(^\s*\}\s*(\w*)\s*;\s*$)");
  struct open_node {
    field f;
    bool is_union = false;
  };
  std::vector<open_node> stack(1);
  layout result;
  std::istringstream lines(out);
  bool header = false;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!header) {
      if (line.find("type = ") != std::string::npos) {
        header = true;
        stack[0].is_union = line.find("type = union") != std::string::npos;
      }
      continue;
    }
    if (std::regex_search(line, m, total)) {
      if (stack.size() == 1) result.size = std::stoull(m[1]);
      continue;
    }
    if (std::regex_match(line, m, close)) {
      REQUIRE(stack.size() > 1);
      open_node done = std::move(stack.back());
      stack.pop_back();
      done.f.name = m[1];
      stack.back().f.children.push_back(std::move(done.f));
      continue;
    }
    if (!std::regex_match(line, m, member)) continue;
    field f;
    f.size = std::stoull(m[3]);
    // A union's members have no offset column: they start where the union does.
    f.bit_offset =
        m[1].matched ? std::stoull(m[1]) * 8 + (m[2].matched ? std::stoull(m[2]) : 0) : stack.back().f.bit_offset;
    if (!m[1].matched) REQUIRE(stack.back().is_union);
    const std::string decl = m[4];
    if (!decl.empty() && decl.back() == '{') {
      stack.push_back({f, decl.rfind("union", 0) == 0});
      continue;
    }
    REQUIRE(!decl.empty());
    REQUIRE(decl.back() == ';');
    f.name = declared_name(decl.substr(0, decl.size() - 1));
    REQUIRE_FALSE(f.name.empty());
    stack.back().f.children.push_back(std::move(f));
  }
  REQUIRE(header);
  REQUIRE(stack.size() == 1);
  result.fields = flatten(std::move(stack[0].f.children));
  return result;
}

// dt's JSON fields (offsets relative to the enclosing type) as absolute bit offsets; nested
// fields only where gdb has them (gdb does not expand a member typed by a typedef or an array).
inline std::vector<field> dt_fields(const rapidjson::Value& fields, uint64_t base_bits,
                                    const std::vector<field>& like) {
  std::vector<field> out;
  size_t i = 0;
  for (const auto& j : fields.GetArray()) {
    field f;
    f.name = j["name"].GetString();
    f.bit_offset =
        base_bits + j["offset"].GetUint64() * 8 + (j.HasMember("bit_length") ? j["bit_position"].GetUint() : 0);
    f.size = j.HasMember("size") ? j["size"].GetUint64() : 0;
    if (i < like.size() && !like[i].children.empty() && j.HasMember("fields")) {
      f.children = dt_fields(j["fields"], base_bits + j["offset"].GetUint64() * 8, like[i].children);
    }
    out.push_back(std::move(f));
    ++i;
  }
  return out;
}

inline bool operator==(const field& a, const field& b) {
  return a.name == b.name && a.bit_offset == b.bit_offset && a.size == b.size && a.children == b.children;
}

// dt's text and JSON for a type against `ptype /o gdb_type` on `program`: every member's offset,
// size and nesting, the total size, and the text's outermost rows in the JSON's order.
inline void check_dt_layout(const std::string& program, const std::string& gdb_type, const std::string& dt_text,
                            const std::string& dt_json) {
  const layout expected = gdb_layout(program, gdb_type);
  REQUIRE_FALSE(expected.fields.empty());
  INFO(dt_text);
  rapidjson::Document doc;
  doc.Parse(dt_json.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(doc["size"].GetUint64() == expected.size);
  const std::vector<field> got = dt_fields(doc["fields"], 0, expected.fields);
  INFO("gdb: " << expected.fields);
  INFO("dt:  " << got);
  CHECK(got == expected.fields);

  // The text a user reads says the same: its outermost lines are "+0x<offset> <name> : ...",
  // in the JSON's order (a bitfield's line also gives its position in the storage unit).
  std::vector<std::string> text_rows, json_rows;
  std::istringstream lines(dt_text);
  const std::regex row(R"(^   \+0x([0-9a-f]+) (\S+)\s+: (.*)$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch r;
    if (std::regex_match(line, r, row)) text_rows.push_back(r[1].str() + " " + r[2].str());
  }
  for (const auto& j : doc["fields"].GetArray()) {
    char offset[32];
    std::snprintf(offset, sizeof offset, "%03llx", static_cast<unsigned long long>(j["offset"].GetUint64()));
    json_rows.push_back(std::string(offset) + " " + j["name"].GetString());
  }
  CHECK(text_rows == json_rows);
}

}  // namespace toolhost::testing
