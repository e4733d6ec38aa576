// dv against gdb (issue 20): the stack program built -O0 and -O2, stopped in its SIGUSR1 handler;
// for every frame, `.frame N; dv` lists the same parameters and locals, in the same order, with
// the same values as gdb's `frame N`, `info args`, `info locals` on the same core (values in
// memory, in registers, at the function's entry through the caller's call site, and optimized
// out). Structures and arrays are compared member by member.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <toolhost/sdk/json.hpp>

#include "gdb_oracle.hpp"
#include "stack_tools.hpp"
#include "tool_answer.hpp"

using toolhost::testing::unpack;

namespace {

// One value as gdb prints it: `<optimized out>`, a scalar word, a "string", or {a, b} / {x = a}.
struct gdb_value {
  enum class kind { unavailable, word, string, aggregate } k = kind::word;
  std::string text;                                      // word or string
  std::vector<std::pair<std::string, gdb_value>> items;  // aggregate: (name or "", value)
};

class gdb_value_parser {
 public:
  explicit gdb_value_parser(std::string_view s) : s_(s) {}

  gdb_value parse() {
    skip();
    gdb_value v;
    if (s_.substr(i_, 15) == "<optimized out>") {
      i_ += 15;
      v.k = gdb_value::kind::unavailable;
    } else if (i_ < s_.size() && s_[i_] == '{') {
      ++i_;
      v.k = gdb_value::kind::aggregate;
      while (skip(), i_ < s_.size() && s_[i_] != '}') {
        std::string name;
        // "name = value" or a bare value.
        const size_t eq = s_.find(" = ", i_);
        const size_t stop = s_.find_first_of(",{}\"", i_);
        if (eq != std::string_view::npos && (stop == std::string_view::npos || eq < stop)) {
          name = std::string(s_.substr(i_, eq - i_));
          i_ = eq + 3;
        }
        gdb_value item = parse();
        skip();
        // `0 <repeats 16 times>` stands for 16 copies.
        size_t repeats = 1;
        if (s_.substr(i_, 9) == "<repeats ") {
          repeats = std::stoul(std::string(s_.substr(i_ + 9)));
          i_ = s_.find('>', i_) + 1;
        }
        for (size_t r = 0; r < repeats; ++r) v.items.emplace_back(name, item);
        skip();
        if (i_ < s_.size() && s_[i_] == ',') ++i_;
      }
      ++i_;
    } else if (i_ < s_.size() && s_[i_] == '"') {
      v.k = gdb_value::kind::string;
      ++i_;
      while (i_ < s_.size() && s_[i_] != '"') {
        if (s_[i_] == '\\') {
          v.text += '\\';  // an escape: the comparison stops here
          i_ += 2;
          continue;
        }
        v.text += s_[i_++];
      }
      ++i_;
      while (i_ < s_.size() && s_.substr(i_, 3) == "...") i_ += 3;
    } else {
      // A word, with what gdb adds after it: 0x555 <main>, 0x7ffe "text", 97 'a'.
      const size_t end = s_.find_first_of(" ,}", i_);
      v.text = std::string(s_.substr(i_, end - i_));
      i_ = end == std::string_view::npos ? s_.size() : end;
      if (s_.substr(i_, 2) == " <" && s_.substr(i_, 10) != " <repeats ") i_ = s_.find('>', i_) + 1;
      if (s_.substr(i_, 2) == " '") i_ = s_.find('\'', i_ + 2) + 1;
      if (s_.substr(i_, 2) == " \"") {
        ++i_;
        parse();  // the string a char * points at
      }
    }
    return v;
  }

 private:
  void skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  std::string_view s_;
  size_t i_ = 0;
};

std::string printable_prefix(const std::string& s) {
  size_t n = 0;
  while (n < s.size() && s[n] >= 0x20 && s[n] < 0x7f && s[n] != '\\') ++n;
  return s.substr(0, n);
}

// Whether our JSON decoding (render_value's) says what gdb printed; `why` says where not.
bool same_value(const gdb_value& g, const rapidjson::Value& ours, const std::string& path, std::string& why) {
  auto differ = [&](const std::string& what) {
    why = path + ": " + what;
    return false;
  };
  if (ours.HasMember("available") && !ours["available"].GetBool()) {
    return g.k == gdb_value::kind::unavailable ? true : differ("ours is unavailable, gdb has a value");
  }
  if (g.k == gdb_value::kind::unavailable) return differ("gdb says optimized out, ours has a value");
  if (g.k == gdb_value::kind::aggregate) {
    const bool fields = ours.HasMember("fields");
    if (!fields && !ours.HasMember("elements")) return differ("gdb shows an aggregate, ours a scalar");
    const auto& list = fields ? ours["fields"] : ours["elements"];
    if (list.Size() != g.items.size()) {
      return differ("gdb has " + std::to_string(g.items.size()) + " members, ours " + std::to_string(list.Size()));
    }
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
      const auto& [name, item] = g.items[i];
      const auto& mine = fields ? list[i]["value"] : list[i];
      if (fields && name != list[i]["name"].GetString())
        return differ("member " + name + " vs " + list[i]["name"].GetString());
      if (!same_value(item, mine, path + "." + (fields ? name : std::to_string(i)), why)) return false;
    }
    return true;
  }
  if (g.k == gdb_value::kind::string) {
    if (!ours.HasMember("string")) return differ("gdb shows a string, ours does not");
    const std::string a = printable_prefix(g.text), b = printable_prefix(ours["string"].GetString());
    return a == b ? true : differ("\"" + a + "\" vs \"" + b + "\"");
  }
  const std::string& word = g.text;
  if (ours.HasMember("enumerator"))
    return word == ours["enumerator"].GetString() ? true : differ(word + " vs enumerator");
  if (!ours.HasMember("value")) return differ("ours has no value for " + word);
  const auto& v = ours["value"];
  if (v.IsBool()) return (word == (v.GetBool() ? "true" : "false")) ? true : differ(word + " vs bool");
  if (v.IsString()) {  // hex: pointers and unsigned integers
    const uint64_t mine = std::stoull(v.GetString(), nullptr, 16);
    const uint64_t theirs = word.rfind("0x", 0) == 0 ? std::stoull(word, nullptr, 16)
                            : word[0] == '-'         ? static_cast<uint64_t>(std::stoll(word))
                                                     : std::stoull(word);
    return mine == theirs ? true : differ(word + " vs " + v.GetString());
  }
  if (v.IsInt64())
    return std::stoll(word) == v.GetInt64() ? true : differ(word + " vs " + std::to_string(v.GetInt64()));
  if (v.IsUint64())
    return std::stoull(word) == v.GetUint64() ? true : differ(word + " vs " + std::to_string(v.GetUint64()));
  if (v.IsDouble()) {
    const double theirs = std::stod(word), mine = v.GetDouble();
    return std::fabs(theirs - mine) <= 1e-6 * std::max(std::fabs(theirs), 1e-300) ? true : differ(word + " vs double");
  }
  return differ("cannot compare " + word);
}

struct gdb_frame_variables {
  std::vector<std::pair<std::string, gdb_value>> args, locals;
};

// `info args` / `info locals` of frames 0..count-1 at the program's SIGUSR1 handler.
std::vector<gdb_frame_variables> gdb_variables(const std::string& program, const std::string& core, size_t count) {
  std::vector<std::string> commands{"set backtrace past-main on"};
  for (size_t i = 0; i < count; ++i) {
    commands.push_back("frame " + std::to_string(i));
    commands.push_back("echo @@args\\n");
    commands.push_back("info args");
    commands.push_back("echo @@locals\\n");
    commands.push_back("info locals");
    commands.push_back("echo @@end\\n");
  }
  const std::string text = toolhost::testing::gdb_batch(program, commands, core);
  UNSCOPED_INFO("gdb:\n" << text);
  std::vector<gdb_frame_variables> frames;
  std::istringstream lines(text);
  std::vector<std::pair<std::string, gdb_value>>* into = nullptr;
  for (std::string line; std::getline(lines, line);) {
    if (line == "@@args") {
      frames.emplace_back();
      into = &frames.back().args;
    } else if (line == "@@locals") {
      into = &frames.back().locals;
    } else if (line == "@@end") {
      into = nullptr;
    } else if (into != nullptr) {
      const size_t eq = line.find(" = ");
      if (eq == std::string::npos) continue;  // "No locals.", "No arguments."
      into->emplace_back(line.substr(0, eq), gdb_value_parser(std::string_view(line).substr(eq + 3)).parse());
    }
  }
  return frames;
}

void compare_program(const std::string& program) {
  const std::string core = "/tmp/toolhost-locals-core-" + std::to_string(getpid());
  const std::string stop_text = toolhost::testing::gdb_batch(
      program, {"handle SIGUSR1 nostop noprint", "break main", "run", "break on_usr1", "continue", "gcore " + core});
  INFO(stop_text);
  auto tools = toolhost::testing::make_stack_tools();
  REQUIRE_FALSE(unpack(tools->open("dump", core, "")).error);
  auto k = unpack(tools->command("k", 20000, "json", [] { return false; }));
  auto stack = toolhost::sdk::parse_json(k.structured);
  REQUIRE(stack);
  const auto& frames = (*stack)["result"]["frames"];
  const auto expected = gdb_variables(program, core, frames.Size());
  REQUIRE(expected.size() == frames.Size());
  size_t compared = 0;
  for (rapidjson::SizeType i = 0; i < frames.Size(); ++i) {
    if (frames[i]["signal_trampoline"].GetBool()) continue;
    const std::string function = frames[i]["function"].GetString();
    INFO("frame " << i << " " << function);
    auto dv = unpack(tools->command(".frame 0n" + std::to_string(i) + "; dv", 20000, "json", [] { return false; }));
    INFO(dv.text);
    std::vector<std::pair<std::string, gdb_value>> gdb_all = expected[i].args;
    gdb_all.insert(gdb_all.end(), expected[i].locals.begin(), expected[i].locals.end());
    if (function.empty()) {
      // No debug information (_start): gdb has no variables and dv says so.
      CHECK(gdb_all.empty());
      CHECK(dv.error);
      continue;
    }
    REQUIRE_FALSE(dv.error);
    auto doc = toolhost::sdk::parse_json(dv.structured);
    REQUIRE(doc);
    const auto& ours = (*doc)["result"]["variables"];
    std::vector<std::string> our_names, gdb_names;
    for (const auto& v : ours.GetArray())
      our_names.push_back(std::string(v["parameter"].GetBool() ? "arg " : "") + v["name"].GetString());
    for (const auto& a : expected[i].args) gdb_names.push_back("arg " + a.first);
    for (const auto& l : expected[i].locals) gdb_names.push_back(l.first);
    REQUIRE(our_names == gdb_names);
    for (rapidjson::SizeType j = 0; j < ours.Size(); ++j) {
      std::string why;
      const bool same = same_value(gdb_all[j].second, ours[j]["value"], gdb_all[j].first, why);
      INFO(why);
      CHECK(same);
      ++compared;
    }
  }
  CHECK(compared >= 10);
  std::remove(core.c_str());
}

}  // namespace

TEST_CASE("dv equals gdb's info args and info locals in every frame", "[locals]") {
  for (const char* program : {STACK_PROGRAM_O0, STACK_PROGRAM_O2}) {
    INFO(program);
    compare_program(program);
  }
}
