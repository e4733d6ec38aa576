// The debugger's tools over a Windows crash dump, for the symbol tests: a "dump" backend made
// from the dump backend's library, and helpers to run command lines and read the answers.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <toolhost/sdk/json.hpp>

#include "dump_factory.hpp"
#include "tools.hpp"

namespace toolhost::test::windows {

struct answer {
  std::string text;
  bool error = false;
  std::string structured;
  // The structured content parsed (format json).
  rapidjson::Document json() const {
    rapidjson::Document d;
    d.Parse(structured.c_str());
    return d;
  }
};

inline answer unpack(const sdk::result& r) {
  auto doc = sdk::parse_json(r.to_json());
  answer a;
  REQUIRE(doc);
  for (const auto& block : (*doc)["content"].GetArray()) a.text += block["text"].GetString();
  a.error = r.is_error();
  if (const auto* s = sdk::member(*doc, "structuredContent")) a.structured = sdk::to_json(*s);
  return a;
}

inline std::unique_ptr<debugger::debugger_tools> make_tools(debugger::launch_settings launch = {}) {
  return std::make_unique<debugger::debugger_tools>(
      [](const std::string& name) { return name == "dump" ? &dump_backend::factory() : nullptr; }, std::move(launch));
}

inline answer run(debugger::debugger_tools& tools, const std::string& line, const std::string& format = "text") {
  auto a = unpack(tools.command(line, 10000, format, [] { return false; }));
  UNSCOPED_INFO("> " << line << "\n" << a.text);
  return a;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

}  // namespace toolhost::test::windows
