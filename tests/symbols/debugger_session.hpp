// The debugger's tools over a Windows crash dump, for the symbol tests: a "dump" backend made
// from the dump backend's library, and helpers to run command lines and read the answers.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <toolhost/sdk/json.hpp>

#include "open_dump.hpp"
#include "target_adapter.hpp"
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

inline const toolhost_debug_target_factory_t* dump_factory() {
  static const toolhost_debug_target_factory_t factory = {
      sizeof(toolhost_debug_target_factory_t), TOOLHOST_DEBUG_TARGET_VERSION, "dump", "test dumps", nullptr, "a dump file",
      [](const toolhost_debug_target_factory_t*, const char* connect, const char*, const char*, uint32_t,
         toolhost_writer_t* error) -> toolhost_debug_target_t* {
        const std::string path = connect;
        return dump_backend::open_target(error, "The dump", [path] { return dump_backend::open_dump(path); });
      }};
  return &factory;
}

inline std::unique_ptr<debugger::debugger_tools> make_tools(debugger::launch_settings launch = {}) {
  return std::make_unique<debugger::debugger_tools>(
      [](const std::string& name) { return name == "dump" ? dump_factory() : nullptr; }, std::move(launch));
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
