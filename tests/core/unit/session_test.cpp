// The session layer driven in-process, as a transport would: JSON-RPC framing rules, the
// lifecycle, batches, errors, cancellation and progress.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include <toolhost/sdk/json.hpp>

#include "host/config/config.hpp"
#include "host/mcp/session.hpp"
#include "host/plugins/loader.hpp"

using namespace toolhost;

namespace {

class harness {
 public:
  explicit harness(const char* server_name = "example") {
    auto c = config::load(EXAMPLE_CONFIG, "/");
    REQUIRE(c.ok());
    cfg_ = *std::move(c);
    loader_ = std::make_unique<plugins::loader>(cfg_.plugin_dirs);
    srv_ = std::make_unique<mcp::server>(cfg_, *cfg_.find_server(server_name), *loader_);
    srv_->load_now();
    sink_ = [this](mcp::outgoing m) {
      std::lock_guard lock(mutex_);
      messages_.push_back(std::move(m));
      cv_.notify_all();
    };
    session_ = mcp::session::create(*srv_, sink_);
  }
  ~harness() {
    session_->close(1000);
    srv_->workers().wait_idle(2000);
    srv_->shutdown();
  }

  mcp::handled send(const std::string& text) { return session_->handle(text, sink_); }
  void init(const char* version = "2025-11-25") {
    send(std::string(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")") + version +
         R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    take_for("0");
  }

  // Waits for the final message of request `id` (JSON text) and returns it.
  std::string take_for(const std::string& id, int timeout_ms = 5000) {
    std::unique_lock lock(mutex_);
    std::string found;
    bool ok = cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
      for (auto it = messages_.begin(); it != messages_.end(); ++it) {
        if (it->related_request == id && it->final) {
          found = it->json;
          messages_.erase(it);
          return true;
        }
      }
      return false;
    });
    if (!ok) FAIL("no answer for request " << id);
    return found;
  }
  std::vector<mcp::outgoing> all() {
    std::lock_guard lock(mutex_);
    return messages_;
  }

 private:
  config::config cfg_;
  std::unique_ptr<plugins::loader> loader_;
  std::unique_ptr<mcp::server> srv_;
  mcp::sink sink_;
  std::shared_ptr<mcp::session> session_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<mcp::outgoing> messages_;
};

std::string error_code(const std::string& message) {
  auto doc = sdk::parse_json(message);
  REQUIRE(doc);
  const auto* e = sdk::member(*doc, "error");
  return e == nullptr ? "none" : std::to_string(sdk::member(*e, "code")->GetInt());
}

}  // namespace

TEST_CASE("initialize echoes a supported version and offers the latest otherwise", "[session]") {
  for (const char* v : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    harness h;
    h.send(std::string(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")") + v +
           R"(","capabilities":{}}})");
    CHECK(h.take_for("1").find(std::string(R"("protocolVersion":")") + v + "\"") != std::string::npos);
  }
  harness h;
  h.send(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{}}})");
  CHECK(h.take_for("1").find(R"("protocolVersion":"2025-11-25")") != std::string::npos);
}

TEST_CASE("requests before initialize are refused, ping is not", "[session]") {
  harness h;
  h.send(R"({"jsonrpc":"2.0","id":"a","method":"tools/list"})");
  CHECK(error_code(h.take_for("\"a\"")) == "-32600");
  h.send(R"({"jsonrpc":"2.0","id":"b","method":"ping"})");
  CHECK(h.take_for("\"b\"") == R"({"jsonrpc":"2.0","id":"b","result":{}})");
}

TEST_CASE("malformed messages get the spec's errors and the session goes on", "[session]") {
  harness h;
  h.init();
  CHECK(h.send("{not json").parse_error);
  h.send(R"({"jsonrpc":"1.0","id":5,"method":"ping"})");
  CHECK(error_code(h.take_for("5")) == "-32600");
  h.send(R"({"jsonrpc":"2.0","id":6,"method":"no/such"})");
  CHECK(error_code(h.take_for("6")) == "-32601");
  h.send(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":[1]}})");
  CHECK(error_code(h.take_for("7")) == "-32602");
  h.send(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nope"}})");
  const std::string unknown = h.take_for("8");
  CHECK(error_code(unknown) == "-32602");
  CHECK(unknown.find("Unknown tool: nope") != std::string::npos);
  h.send(R"({"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"loud"}})");
  CHECK(error_code(h.take_for("9")) == "-32602");
  // Wrong argument types are a tool error the model can act on, not a protocol error.
  h.send(R"({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"count","arguments":{"to":"three"}}})");
  const std::string bad = h.take_for("10");
  CHECK(bad.find(R"("isError":true)") != std::string::npos);
  CHECK(bad.find("'to' must be integer") != std::string::npos);
  h.send(R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"count","arguments":{"to":2}}})");
  CHECK(h.take_for("11").find(R"("structuredContent":{"counted":2,"completed":true})") != std::string::npos);
}

TEST_CASE("batches work in 2025-03-26 only", "[session]") {
  {
    harness h;
    h.init("2025-03-26");
    h.send(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},)"
           R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{"to":1}}}])");
    std::string batch;
    for (int i = 0; i < 200 && batch.empty(); ++i) {
      for (const auto& m : h.all()) {
        if (!m.json.empty() && m.json.front() == '[') batch = m.json;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE_FALSE(batch.empty());
    auto doc = sdk::parse_json(batch);
    REQUIRE(doc);
    REQUIRE(doc->IsArray());
    CHECK(doc->Size() == 2);
  }
  harness h;
  h.init("2025-11-25");
  h.send(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  bool refused = false;
  for (const auto& m : h.all())
    refused = refused || m.json.find("batches are not part of MCP 2025-11-25") != std::string::npos;
  CHECK(refused);
}

TEST_CASE("a cancelled call stops and sends no result", "[session]") {
  harness h;
  h.init();
  h.send(
      R"({"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"count","arguments":{"to":1000,"delay_ms":20},"_meta":{"progressToken":"tok"}}})");
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  h.send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42,"reason":"test"}})");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto before = h.all().size();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto messages = h.all();
  CHECK(messages.size() == before);  // no more progress once cancelled
  size_t progress = 0;
  for (const auto& m : messages) {
    CHECK(m.json.find(R"("result")") == std::string::npos);
    if (m.json.find("notifications/progress") != std::string::npos) ++progress;
  }
  CHECK(progress > 0);
  CHECK(progress < 100);
}

TEST_CASE("progress only goes to clients that asked for it", "[session]") {
  harness h;
  h.init();
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":{"to":3}}})");
  h.take_for("1");
  for (const auto& m : h.all()) CHECK(m.json.find("notifications/progress") == std::string::npos);
}

TEST_CASE("privacy replaces the home folder in answers", "[session]") {
  setenv("HOME", "/home/someone", 1);
  harness h("example-private");
  h.init();
  // The fixture's echo tool sends its arguments back, path included.
  h.send(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fixture_echo","arguments":{"text":"/home/someone/secret and /home/someonelse"}}})");
  const std::string answer = h.take_for("1");
  CHECK(answer.find(R"("text":"~/secret and /home/someonelse")") != std::string::npos);
}

TEST_CASE("a result that is not a CallToolResult becomes a tool error; a multi-line one one line", "[session]") {
  harness h("example-private");
  h.init();
  int id = 1;
  for (const char* kind :
       {"no content", "content not an array", "nested content", "cut short", "trailing text", "an array"}) {
    INFO(kind);
    const std::string sid = std::to_string(id++);
    h.send(std::string(R"({"jsonrpc":"2.0","id":)") + sid +
           R"(,"method":"tools/call","params":{"name":"fixture_echo","arguments":{"text":"bad result: )" + kind +
           R"("}}})");
    const std::string answer = h.take_for(sid);
    CHECK(answer.find(R"("isError":true)") != std::string::npos);
    CHECK(answer.find("returned an invalid result (not an MCP CallToolResult)") != std::string::npos);
  }
  h.send(
      R"({"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"fixture_echo","arguments":{"text":"bad result: multiline"}}})");
  const std::string answer = h.take_for("99");
  CHECK(answer == R"({"jsonrpc":"2.0","id":99,"result":{"content":[{"type":"text","text":"two\nlines"}]}})");
}
