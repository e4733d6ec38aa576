// Which revision the MCP client speaks to an upstream: 2026-07-28 to toolhost itself (a real
// 2026-07-28 server), 2025-11-25 to server-everything (a 2025-era one, which refuses
// server/discover), and what each era's answers look like to the client's callers.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include <unistd.h>

#include <catch2/catch.hpp>

#include <toolhost/mcp_client/client.hpp>
#include <toolhost/mcp_client/tool_headers.hpp>
#include <toolhost/sdk/json.hpp>

using namespace toolhost::mcp_client;
using namespace std::chrono_literals;

TEST_CASE("negotiation: only a discover result that lists 2026-07-28 makes the upstream modern") {
  auto error = read_discover_answer(absl::UnknownError("the upstream answered with error -32601: Method not found"));
  REQUIRE_FALSE(error.ok());
  CHECK(std::string(error.status().message()).find("Method not found") != std::string::npos);

  auto older = read_discover_answer(std::string(R"({"supportedVersions":["2025-11-25"],"capabilities":{}})"));
  REQUIRE_FALSE(older.ok());
  CHECK(std::string(older.status().message()).find("does not list 2026-07-28") != std::string::npos);
  CHECK_FALSE(read_discover_answer(std::string("[]")).ok());

  auto modern = read_discover_answer(std::string(
      R"({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"instructions":"hi",)"
      R"("resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}}})"));
  REQUIRE(modern.ok());
  CHECK(modern->modern());
  CHECK(modern->instructions == "hi");
  CHECK(modern->server == R"({"name":"up","version":"1"})");
}

TEST_CASE("negotiation: a 2026-07-28 result loses its era's fields for callers that expect 2025-11-25") {
  CHECK(legacy_result(R"({"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{}}})") ==
        R"({"content":[]})");
  CHECK(legacy_result(R"({"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{},"k":1}})") ==
        R"({"content":[],"_meta":{"k":1}})");
  CHECK(legacy_result(R"({"content":[]})") == R"({"content":[]})");
}

TEST_CASE("input rounds: an input-required result is read, answered in full and retried with the state unchanged") {
  auto none = read_input_round(R"({"content":[{"type":"text","text":"input_required"}]})");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto bad = read_input_round(R"({"resultType":"input_required","inputRequests":{}})");
  CHECK_FALSE(bad.ok());

  auto round = read_input_round(
      R"({"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"A?"}},)"
      R"("b":{"method":"roots/list"}},"requestState":"opaque.state"})");
  REQUIRE(round.ok());
  REQUIRE(round->has_value());
  const input_round& r = **round;
  REQUIRE(r.requests.size() == 2);
  CHECK(r.requests[0].key == "a");
  CHECK(r.requests[1].method == "roots/list");
  CHECK(r.request_state == R"("opaque.state")");

  // One question failing does not stop the others from being asked.
  std::vector<std::string> asked;
  auto failed = answer_round(r, [&](const input_request& q) -> absl::StatusOr<std::string> {
    asked.push_back(q.key);
    if (q.key == "a") return absl::CancelledError("not yet");
    return std::string(R"({"roots":[]})");
  });
  CHECK(failed.status().code() == absl::StatusCode::kCancelled);
  CHECK(asked == std::vector<std::string>{"a", "b"});

  auto answers = answer_round(r, [](const input_request&) -> absl::StatusOr<std::string> { return std::string("{}"); });
  REQUIRE(answers.ok());
  const std::string retry =
      retry_params(R"({"name":"t","inputResponses":{"old":{}},"requestState":"older"})", *answers, r);
  CHECK(retry == R"({"name":"t","inputResponses":{"a":{},"b":{}},"requestState":"opaque.state"})");
}

TEST_CASE("tool headers: a listing's x-mcp-header annotations are kept per tool, and invalid ones leave the tool out") {
  auto read = read_tool_annotations({
      R"({"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},)"
      R"("query":{"type":"string"}}}})",
      R"({"name":"plain","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}})",
      R"({"name":"number","inputSchema":{"type":"object","properties":{"x":{"type":"number","x-mcp-header":"X"}}}})",
      R"({"name":"twice","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},)"
      R"("b":{"type":"string","x-mcp-header":"a"}}}})",
      R"({"name":"no-schema"})",
  });
  REQUIRE(read.kept.size() == 3);
  CHECK(read.kept[0].find(R"("name":"sql")") != std::string::npos);
  CHECK(read.kept[1].find(R"("name":"plain")") != std::string::npos);
  CHECK(read.kept[2] == R"({"name":"no-schema"})");
  REQUIRE(read.annotations.size() == 1);
  REQUIRE(read.annotations.at("sql").size() == 1);
  CHECK(read.annotations.at("sql")[0].header == "Region");
  REQUIRE(read.refused.size() == 2);
  CHECK(read.refused[0].find("'number'") != std::string::npos);
  CHECK(read.refused[0].find("type 'number'") != std::string::npos);
  CHECK(read.refused[1].find("'twice'") != std::string::npos);
}

TEST_CASE("negotiation: server-everything refuses server/discover and is spoken to in 2025-11-25") {
  client_options o;
  o.upstream = upstream_spec{{REA_TEST_NODE, REA_TEST_EVERYTHING, "stdio"}};
  o.start_timeout = 30s;
  client c(o, {});
  REQUIRE(c.start().ok());
  auto info = c.info();
  REQUIRE(info.has_value());
  CHECK(info->protocol_version == "2025-11-25");
  CHECK(info->chosen_because.find("answered server/discover with an error") != std::string::npos);
  auto echo = c.request("tools/call", R"({"name":"echo","arguments":{"message":"old"}})");
  REQUIRE(echo.ok());
  CHECK(echo->find("Echo: old") != std::string::npos);
}

TEST_CASE("negotiation: an upstream that never answers server/discover is initialized after discover_timeout") {
  const std::string log =
      std::filesystem::temp_directory_path() / ("rea-silent-" + std::to_string(::getpid()) + ".jsonl");
  client_options o;
  o.upstream = upstream_spec{{REA_TEST_NODE, REA_TEST_TAP, log, REA_TEST_NODE, REA_TEST_EVERYTHING, "stdio"}};
  o.upstream.env["TAP_DROP"] = "server/discover";
  o.start_timeout = 30s;
  o.discover_timeout = 300ms;
  client c(o, {});
  REQUIRE(c.start().ok());
  CHECK(c.info()->protocol_version == "2025-11-25");
  CHECK(c.info()->chosen_because.find("did not answer server/discover in time") != std::string::npos);
  std::filesystem::remove(log);
}

#ifdef REA_TEST_TOOLHOST
namespace {

client_options toolhost_upstream() {
  client_options o;
  o.upstream = upstream_spec{{REA_TEST_TOOLHOST, "--config", REA_TEST_TOOLHOST_CONFIG, "--server", "up"}};
  o.capabilities_json = R"({"elicitation":{"form":{}}})";
  o.start_timeout = 30s;
  o.request_timeout = 30s;
  return o;
}

std::string structured(const std::string& result) {
  auto doc = toolhost::sdk::parse_json(result);
  REQUIRE(doc.has_value());
  const auto* s = toolhost::sdk::member(*doc, "structuredContent");
  return s != nullptr ? toolhost::sdk::to_json(*s) : result;
}

// The methods of the upstream's notifications, as the client's callback saw them.
class notifications {
 public:
  client_callbacks callbacks() {
    client_callbacks out;
    out.notification = [this](const std::string& method, const std::string&) {
      std::lock_guard lock(mutex_);
      methods_.push_back(method);
    };
    return out;
  }
  // Waits up to 5 s for one of `method`.
  bool eventually(const std::string& method) {
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard lock(mutex_);
        if (std::find(methods_.begin(), methods_.end(), method) != methods_.end()) return true;
      }
      std::this_thread::sleep_for(25ms);
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> methods_;
};

}  // namespace

TEST_CASE("negotiation: toolhost answers server/discover and is spoken to in 2026-07-28, rounds and all") {
  client c(toolhost_upstream(), {});
  REQUIRE(c.start().ok());
  auto info = c.info();
  REQUIRE(info.has_value());
  CHECK(info->protocol_version == "2026-07-28");
  CHECK(info->chosen_because == "it answered server/discover");
  CHECK(info->server.find(R"("name":"toolhost")") != std::string::npos);

  auto tools = c.list_all("tools/list", "tools");
  REQUIRE(tools.ok());
  std::string all;
  for (const auto& t : *tools) all += t;
  CHECK(all.find(R"("name":"count")") != std::string::npos);

  // count sits behind an "ask" row: the upstream answers with an input-required result, the
  // question reaches `input`, and the call is sent again with the answer.
  std::vector<std::string> keys;
  std::atomic<int> progress{0};
  request_options o;
  o.progress = [&](double, double, const std::string&) { ++progress; };
  o.input = [&](const input_request& q) -> absl::StatusOr<std::string> {
    keys.push_back(q.key + " " + q.method);
    return std::string(R"({"action":"accept","content":{"approve":true}})");
  };
  auto counted = c.request("tools/call", R"({"name":"count","arguments":{"to":3}})", o);
  REQUIRE(counted.ok());
  CHECK(structured(*counted) == R"({"counted":3,"completed":true})");
  CHECK(keys == std::vector<std::string>{"toolhost_approval elicitation/create"});
  CHECK(progress == 3);
  CHECK(counted->find("resultType") == std::string::npos);  // callers see 2025-11-25's shape

  o.input = [](const input_request&) -> absl::StatusOr<std::string> { return std::string(R"({"action":"decline"})"); };
  auto refused = c.request("tools/call", R"({"name":"count","arguments":{"to":3}})", o);
  REQUIRE(refused.ok());
  CHECK(refused->find(R"("isError":true)") != std::string::npos);

  // Without anyone to answer, the question is an error that names it.
  auto nobody = c.request("tools/call", R"({"name":"count","arguments":{"to":3}})");
  REQUIRE_FALSE(nobody.ok());
  CHECK(std::string(nobody.status().message()).find("asks for input (elicitation/create)") != std::string::npos);
}

TEST_CASE("negotiation: a 2026-07-28 upstream's questions over several rounds, and several in one round") {
  auto o = toolhost_upstream();
  o.capabilities_json = R"({"elicitation":{"form":{}},"sampling":{},"roots":{}})";
  client c(o, {});
  std::vector<std::string> asked;
  request_options r;
  r.input = [&](const input_request& q) -> absl::StatusOr<std::string> {
    asked.push_back(q.key);
    if (q.key == "step1") return std::string(R"({"action":"accept","content":{"name":"Ada"}})");
    if (q.key == "step2") return std::string(R"({"action":"accept","content":{"color":"teal"}})");
    if (q.key == "user_name") return std::string(R"({"action":"accept","content":{"name":"Grace"}})");
    if (q.key == "greeting")
      return std::string(R"({"role":"assistant","content":{"type":"text","text":"Hello"},"model":"m"})");
    if (q.key == "client_roots") return std::string(R"({"roots":[{"uri":"file:///src","name":"src"}]})");
    return absl::InvalidArgumentError("unexpected question " + q.key);
  };
  // The upstream keeps the first answer in its requestState: the second round brings only its own.
  auto multi = c.request("tools/call", R"({"name":"test_input_required_result_multi_round","arguments":{}})", r);
  REQUIRE(multi.ok());
  CHECK(multi->find("Ada likes teal") != std::string::npos);
  CHECK(asked == std::vector<std::string>{"step1", "step2"});

  asked.clear();
  auto several = c.request("tools/call", R"({"name":"test_input_required_result_multiple_inputs","arguments":{}})", r);
  REQUIRE(several.ok());
  INFO(*several);
  CHECK(several->find("Hello Grace") != std::string::npos);
  CHECK(several->find("file:///src") != std::string::npos);
  CHECK(asked.size() == 3);
}

TEST_CASE("negotiation: an upstream that keeps asking is given up on after 8 rounds, with a clear error") {
  client c(toolhost_upstream(), {});
  int rounds = 0;
  request_options r;
  // Not an answer the upstream can read (no object), so it asks again every time.
  r.input = [&](const input_request&) -> absl::StatusOr<std::string> {
    ++rounds;
    return std::string(R"("maybe")");
  };
  auto answer = c.request("tools/call", R"({"name":"count","arguments":{"to":1}})", r);
  REQUIRE(answer.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(answer.status().message()) ==
        "the upstream still asked for input (elicitation/create) after 8 rounds of answers to tools/call; giving up");
  CHECK(rounds == kMaxInputRounds);
}

TEST_CASE("negotiation: cancelling a 2026-07-28 call over stdio stops it upstream, and the next call works") {
  client c(toolhost_upstream(), {});
  request_options o;
  o.cancel = std::make_shared<cancel_flag>();
  std::atomic<int> steps{0};
  o.progress = [&](double, double, const std::string&) {
    if (++steps == 3) o.cancel->cancel("enough");
  };
  o.input = [](const input_request&) -> absl::StatusOr<std::string> {
    return std::string(R"({"action":"accept","content":{"approve":true}})");
  };
  auto answer = c.request("tools/call", R"({"name":"count","arguments":{"to":100000,"delay_ms":20}})", o);
  CHECK(answer.status().code() == absl::StatusCode::kCancelled);
  auto text = c.request("tools/call", R"({"name":"test_simple_text","arguments":{}})");
  REQUIRE(text.ok());
  CHECK(text->find("This is a simple text response for testing.") != std::string::npos);
}

TEST_CASE("negotiation: a killed 2026-07-28 upstream fails the call, and the next call starts and discovers it again") {
  notifications notes;
  client c(toolhost_upstream(), notes.callbacks());
  REQUIRE(c.start().ok());
  const int first = c.pid();
  request_options o;
  o.progress = [&](double, double, const std::string&) { ::kill(first, SIGKILL); };
  o.input = [](const input_request&) -> absl::StatusOr<std::string> {
    return std::string(R"({"action":"accept","content":{"approve":true}})");
  };
  auto killed = c.request("tools/call", R"({"name":"count","arguments":{"to":100000,"delay_ms":20}})", o);
  REQUIRE(killed.status().code() == absl::StatusCode::kUnavailable);
  CHECK(std::string(killed.status().message()).find("killed by signal 9") != std::string::npos);

  auto again = c.request("tools/call", R"({"name":"test_trigger_tool_change","arguments":{}})");
  REQUIRE(again.ok());
  CHECK(c.pid() != first);
  CHECK(c.info()->modern());
  // The new process has a subscriptions/listen of its own.
  CHECK(notes.eventually("notifications/tools/list_changed"));
}

TEST_CASE("negotiation: a 2026-07-28 upstream's tool list change arrives through subscriptions/listen") {
  notifications notes;
  client c(toolhost_upstream(), notes.callbacks());
  REQUIRE(c.start().ok());
  REQUIRE(c.request("tools/call", R"({"name":"test_trigger_tool_change","arguments":{}})").ok());
  CHECK(notes.eventually("notifications/tools/list_changed"));
}
#endif
