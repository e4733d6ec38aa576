// The proxy with stand-ins for the host's services and call context, against the test
// upstream in REA mode and probe mode.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <catch2/catch.hpp>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "proxy.hpp"

using namespace toolhost::rea_filter;
using namespace std::chrono_literals;

namespace {

// A toolhost_call_t the way plugin.h documents it, recording what the plugin does with it.
struct fake_call {
  toolhost_call_t raw{};
  std::string meta = "{}";
  std::mutex m;
  std::vector<std::tuple<double, double, std::string>> progress;
  toolhost_cancel_fn cancel_fn = nullptr;
  void* cancel_data = nullptr;
  bool cancelled = false;
  std::string elicitation_answer = R"({"action":"accept","content":{"colour":"blue"}})";
  std::vector<std::string> client_requests;

  fake_call() {
    raw.struct_size = sizeof(raw);
    raw.host_data = this;
    raw.meta_json = "{}";
    raw.client_capabilities_json = "{}";
    raw.server_name = "test";
    raw.protocol_version = "2025-11-25";
    raw.progress = [](const toolhost_call_t* c, double p, double t, const char* msg) {
      auto* self = static_cast<fake_call*>(c->host_data);
      std::lock_guard lock(self->m);
      self->progress.emplace_back(p, t, msg != nullptr ? msg : "");
    };
    raw.is_cancelled = [](const toolhost_call_t* c) {
      auto* self = static_cast<fake_call*>(c->host_data);
      std::lock_guard lock(self->m);
      return self->cancelled;
    };
    raw.on_cancel = [](const toolhost_call_t* c, toolhost_cancel_fn fn, void* ud) {
      auto* self = static_cast<fake_call*>(c->host_data);
      std::lock_guard lock(self->m);
      self->cancel_fn = fn;
      self->cancel_data = ud;
    };
    raw.log = [](const toolhost_call_t*, toolhost_log_level_t, const char*, const char*) {};
    raw.client_request = [](const toolhost_call_t* c, const char* method, const char* params, uint32_t,
                            toolhost_writer_t* out) -> toolhost_status_t {
      auto* self = static_cast<fake_call*>(c->host_data);
      std::lock_guard lock(self->m);
      self->client_requests.push_back(std::string(method) + " " + params);
      toolhost::sdk::write(out, self->elicitation_answer);
      return TOOLHOST_OK;
    };
    raw.confirm_whole_file = [](const toolhost_call_t*, const char*) { return true; };
  }
  void set_meta(std::string m) {
    meta = std::move(m);
    raw.meta_json = meta.c_str();
  }
  void cancel() {
    toolhost_cancel_fn fn;
    void* ud;
    {
      std::lock_guard lock(m);
      cancelled = true;
      fn = cancel_fn;
      ud = cancel_data;
    }
    if (fn != nullptr) fn(ud);
  }
};

struct recorded_hooks {
  std::mutex m;
  std::vector<uint32_t> list_changes;
  std::vector<std::string> logs;
  host_hooks hooks() {
    host_hooks h;
    h.list_changed = [this](uint32_t lists) {
      std::lock_guard lock(m);
      list_changes.push_back(lists);
    };
    h.client_log = [this](toolhost_log_level_t level, const char* logger, const std::string& data) {
      std::lock_guard lock(m);
      logs.push_back(std::to_string(level) + " " + (logger != nullptr ? logger : "-") + " " + data);
    };
    h.host_log = [](toolhost_log_level_t, const std::string&) {};
    return h;
  }
};

std::string temp_log(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("rea-proxy-" + std::to_string(::getpid()) + "-" + name + ".jsonl");
  std::filesystem::remove(p);
  return p.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

proxy_settings upstream(const char* mode, const std::string& log, tool_filter filter) {
  proxy_settings s;
  s.upstream.command = {REA_TEST_NODE, REA_TEST_UPSTREAM, mode};
  s.upstream.env["UPSTREAM_LOG"] = log;
  s.filter = std::move(filter);
  s.timeout = 60s;
  s.start_timeout = 30s;
  return s;
}

// name -> x-toolhost-permission of every listed tool.
std::map<std::string, std::string> listed(const std::string& tools_json) {
  auto doc = toolhost::sdk::parse_json(tools_json);
  REQUIRE(doc.has_value());
  REQUIRE(doc->IsArray());
  std::map<std::string, std::string> out;
  for (const auto& t : doc->GetArray()) {
    out[std::string(toolhost::sdk::string_member(t, "name").value_or(""))] =
        std::string(toolhost::sdk::string_member(t, "x-toolhost-permission").value_or(""));
  }
  return out;
}

}  // namespace

TEST_CASE("proxy: the eleven-rea filter hides REA's writes, refuses them by name, and classifies the rest") {
  const std::string log = temp_log("rea");
  recorded_hooks rec;
  proxy p(upstream("rea", log, tool_filter::eleven_rea()), rec.hooks());
  p.start_in_background();

  const auto tools = listed(p.list_tools());
  for (const char* hidden : {"set_address_name", "set_addresses_names", "set_comment", "set_inline_comment",
                             "set_bookmark", "unset_bookmark", "goto_address", "set_current_document"}) {
    INFO(hidden);
    CHECK(tools.count(hidden) == 0);
  }
  CHECK(tools.size() == 47 - 8);  // upstream.mjs serves 47 REA tools
  CHECK(tools.at("list_procedures") == "rea.read");
  CHECK(tools.at("procedure_pseudo_code") == "rea.read");
  CHECK(tools.at("open_binary") == "rea.read");
  CHECK(tools.at("binary_overview") == "rea.read");
  CHECK(tools.at("xrefs") == "rea.read");
  CHECK(tools.at("compare_functions") == "rea.read");
  CHECK(tools.at("binary_session") == "rea.read");  // by its readOnlyHint
  CHECK(tools.at("close_binary") == "run");
  CHECK(tools.at("export_evidence_bundle") == "run");
  CHECK(tools.at("current_document") == "run");
  CHECK(p.instructions() == "Test upstream in rea mode. These instructions come from the upstream.");

  fake_call call;
  std::string result;
  REQUIRE(p.call_tool(&call.raw, "set_comment", R"({"address":"0x1000","comment":"x"})", &result));
  CHECK(result.find(R"("isError":true)") != std::string::npos);
  CHECK(result.find("Use the `eleven` server's `add_comment` tool instead.") != std::string::npos);
  REQUIRE(p.call_tool(&call.raw, "set_code_type", R"({})", &result));
  CHECK(result.find("`set_code_type` tool instead") != std::string::npos);

  REQUIRE(p.call_tool(&call.raw, "procedure_info", R"({"procedure":"main"})", &result));
  CHECK(result.find(R"("isError":true)") == std::string::npos);
  CHECK(result.find(R"(\"evidence_uri\":\"rea://evidence/ev_)") != std::string::npos);
  CHECK_FALSE(p.call_tool(&call.raw, "no_such_tool", "{}", &result));

  const std::string calls = read_file(log);
  CHECK(calls.find(R"("call":"procedure_info")") != std::string::npos);
  CHECK(calls.find("set_comment") == std::string::npos);  // refused before it reached REA
  p.shutdown();
  std::filesystem::remove(log);
}

TEST_CASE("proxy: progress, list changes, logs, elicitation and cancellation pass through") {
  const std::string log = temp_log("probe");
  recorded_hooks rec;
  tool_filter filter;
  filter.deny("added_2", "");
  proxy p(upstream("probe", log, filter), rec.hooks());
  p.start_in_background();
  REQUIRE(listed(p.list_tools()).at("echo") == "rea.read");

  SECTION("progress reaches the call only when the client asked for it") {
    fake_call asked;
    asked.set_meta(R"({"progressToken":42})");
    std::string result;
    REQUIRE(p.call_tool(&asked.raw, "progress", R"({"steps":3})", &result));
    REQUIRE(asked.progress.size() == 3);
    CHECK(asked.progress[2] == std::make_tuple(3.0, 3.0, std::string("step 3 of 3")));
    fake_call silent;
    REQUIRE(p.call_tool(&silent.raw, "progress", R"({"steps":2})", &result));
    CHECK(silent.progress.empty());
    CHECK(result.find("done 2") != std::string::npos);
  }

  SECTION("a list change is re-filtered and passed on") {
    fake_call call;
    std::string result;
    REQUIRE(p.call_tool(&call.raw, "add_tool", "{}", &result));
    REQUIRE(p.call_tool(&call.raw, "add_tool", "{}", &result));
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard lock(rec.m);
        if (rec.list_changes.size() >= 2) break;
      }
      std::this_thread::sleep_for(10ms);
    }
    {
      std::lock_guard lock(rec.m);
      REQUIRE(rec.list_changes.size() >= 1);
      CHECK((rec.list_changes.back() & TOOLHOST_LIST_TOOLS) != 0);
    }
    const auto tools = listed(p.list_tools());
    CHECK(tools.count("added_1") == 1);
    CHECK(tools.count("added_2") == 0);  // denied, so hidden after the change as well
    REQUIRE(p.call_tool(&call.raw, "added_1", "{}", &result));
    CHECK(result.find("added_1 ran") != std::string::npos);
  }

  SECTION("upstream log messages and elicitation reach the client") {
    fake_call call;
    std::string result;
    REQUIRE(p.call_tool(&call.raw, "log", R"({"text":"mind the gap"})", &result));
    REQUIRE(p.call_tool(&call.raw, "ask", "{}", &result));
    CHECK(result.find("blue") != std::string::npos);
    REQUIRE(call.client_requests.size() == 1);
    CHECK(call.client_requests[0].rfind("elicitation/create ", 0) == 0);
    std::lock_guard lock(rec.m);
    REQUIRE(rec.logs.size() == 1);
    CHECK(rec.logs[0] == std::to_string(TOOLHOST_LOG_WARNING) + " probe \"mind the gap\"");
  }

  SECTION("cancelling the call reaches the upstream") {
    fake_call call;
    auto canceller = std::async(std::launch::async, [&] {
      for (int i = 0; i < 200 && read_file(log).find("wait_for_cancel") == std::string::npos; ++i) {
        std::this_thread::sleep_for(25ms);
      }
      call.cancel();
    });
    std::string result;
    REQUIRE(p.call_tool(&call.raw, "wait_for_cancel", R"({"ms":20000})", &result));
    canceller.get();
    CHECK(result.find("was cancelled") != std::string::npos);
    bool seen = false;
    for (int i = 0; i < 200 && !seen; ++i) {
      seen = read_file(log).find("The client cancelled the call.") != std::string::npos;
      if (!seen) std::this_thread::sleep_for(25ms);
    }
    CHECK(seen);
  }

  SECTION("an upstream that exits fails the call clearly and comes back on the next one") {
    fake_call call;
    std::string result;
    REQUIRE(p.call_tool(&call.raw, "exit", "{}", &result));
    CHECK(result.find(R"("isError":true)") != std::string::npos);
    CHECK(result.find("exited with status 3") != std::string::npos);
    CHECK(result.find("starts again on the next call") != std::string::npos);
    REQUIRE(p.call_tool(&call.raw, "echo", R"({"text":"back"})", &result));
    CHECK(result.find("echo: back") != std::string::npos);
  }
  p.shutdown();
  std::filesystem::remove(log);
}

TEST_CASE("proxy: an upstream that cannot start leaves an empty list and calls that say why") {
  proxy_settings s;
  s.upstream.command = {"no-such-mcp-server-xyz"};
  proxy p(std::move(s), recorded_hooks().hooks());
  CHECK(p.list_tools() == "[]");
  // The agent learns why from the instructions and from any call, each naming the upstream.
  const std::string instructions = p.instructions();
  CHECK(instructions.find("could not start `no-such-mcp-server-xyz`") != std::string::npos);
  CHECK(instructions.find("toolhost check-config") != std::string::npos);
  fake_call call;
  std::string result;
  REQUIRE(p.call_tool(&call.raw, "anything", "{}", &result));
  auto doc = toolhost::sdk::parse_json(result);
  REQUIRE(doc.has_value());
  CHECK((*doc)["isError"].GetBool());
  const std::string text = (*doc)["content"][0]["text"].GetString();
  CHECK(text == instructions);
  CHECK(p.start_and_check().message().find("no-such-mcp-server-xyz") != std::string_view::npos);
}
