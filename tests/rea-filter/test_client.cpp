// The MCP client against real upstreams: the official server-everything, and the test
// upstream written with the official TypeScript SDK server (upstream.mjs).
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <toolhost/mcp_client/client.hpp>
#include <toolhost/sdk/json.hpp>

using namespace toolhost::mcp_client;
using namespace std::chrono_literals;

namespace {

upstream_spec everything() { return upstream_spec{{REA_TEST_NODE, REA_TEST_EVERYTHING, "stdio"}}; }

upstream_spec probe(const std::string& log) {
  upstream_spec spec{{REA_TEST_NODE, REA_TEST_UPSTREAM, "probe"}};
  spec.env["UPSTREAM_LOG"] = log;
  return spec;
}

std::string temp_log(const std::string& name) {
  auto p =
      std::filesystem::temp_directory_path() / ("rea-client-" + std::to_string(::getpid()) + "-" + name + ".jsonl");
  std::filesystem::remove(p);
  return p.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits up to 10 s for `path` to contain `needle`.
bool eventually_contains(const std::string& path, const std::string& needle) {
  for (int i = 0; i < 200; ++i) {
    if (read_file(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::string text_of(const std::string& result) {
  auto doc = toolhost::sdk::parse_json(result);
  REQUIRE(doc.has_value());
  const auto* content = toolhost::sdk::member(*doc, "content");
  REQUIRE(content != nullptr);
  REQUIRE(content->IsArray());
  REQUIRE(content->Size() > 0);
  return std::string(toolhost::sdk::string_member((*content)[0], "text").value_or(""));
}

client_options options(upstream_spec spec) {
  client_options o;
  o.upstream = std::move(spec);
  o.capabilities_json = R"({"elicitation":{"form":{}}})";
  o.start_timeout = 30s;
  o.request_timeout = 30s;
  return o;
}

}  // namespace

TEST_CASE("client: server-everything initializes, lists its tools and answers echo") {
  client c(options(everything()), {});
  REQUIRE(c.start().ok());
  auto info = c.info();
  REQUIRE(info.has_value());
  CHECK(info->protocol_version == "2025-11-25");
  CHECK_FALSE(info->instructions.empty());
  CHECK(info->server.find("mcp-servers/everything") != std::string::npos);

  auto tools = c.list_all("tools/list", "tools");
  REQUIRE(tools.ok());
  std::string all;
  for (const auto& t : *tools) all += t;
  CHECK(all.find(R"("name":"echo")") != std::string::npos);
  CHECK(all.find(R"("name":"trigger-long-running-operation")") != std::string::npos);
  // Declared elicitation, so its conditional tool is there too.
  CHECK(all.find(R"("name":"trigger-elicitation-request")") != std::string::npos);

  auto answer = c.request("tools/call", R"({"name":"echo","arguments":{"message":"hi\nthere"}})");
  REQUIRE(answer.ok());
  CHECK(text_of(*answer) == "Echo: hi\nthere");

  auto resources = c.list_all("resources/list", "resources");
  REQUIRE(resources.ok());
  CHECK_FALSE(resources->empty());
}

TEST_CASE("client: progress from server-everything's long-running operation comes back in order") {
  client c(options(everything()), {});
  std::mutex m;
  std::vector<std::pair<double, double>> seen;
  request_options o;
  o.progress = [&](double p, double total, const std::string&) {
    std::lock_guard lock(m);
    seen.emplace_back(p, total);
  };
  auto answer =
      c.request("tools/call", R"({"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":4}})", o);
  REQUIRE(answer.ok());
  CHECK(text_of(*answer).find("Steps: 4") != std::string::npos);
  REQUIRE(seen.size() == 4);
  for (size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].first == static_cast<double>(i + 1));
    CHECK(seen[i].second == 4.0);
  }
}

TEST_CASE(
    "client: calls in flight together each get their own answer, and a long one reading for all does not hold up the "
    "short ones") {
  client c(options(everything()), {});
  REQUIRE(c.start().ok());
  // The long call starts first, so it is the one reading the upstream's output for everybody.
  std::atomic<int> progress_seen{0};
  request_options slow;
  slow.progress = [&](double, double, const std::string&) { ++progress_seen; };
  auto long_call = std::async(std::launch::async, [&] {
    return c.request("tools/call", R"({"name":"trigger-long-running-operation","arguments":{"duration":2,"steps":4}})",
                     slow);
  });
  std::this_thread::sleep_for(200ms);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::future<std::string>> quick;
  for (int i = 0; i < 8; ++i) {
    quick.push_back(std::async(std::launch::async, [&c, i] {
      std::string text;
      for (int k = 0; k < 20; ++k) {
        const std::string message = "call " + std::to_string(i) + "." + std::to_string(k);
        auto answer = c.request("tools/call", R"({"name":"echo","arguments":{"message":")" + message + R"("}})");
        if (!answer.ok()) return std::string(answer.status().message());
        // No Catch2 assertion off the test's thread: compare the text here, report at the end.
        if (answer->find("\"Echo: " + message + "\"") == std::string::npos)
          return "wrong answer for " + message + ": " + *answer;
      }
      return std::string("ok");
    }));
  }
  for (auto& q : quick) CHECK(q.get() == "ok");
  const auto quick_took = std::chrono::steady_clock::now() - t0;
  CHECK(long_call.wait_for(0ms) == std::future_status::timeout);  // still running: they did not wait for it
  CHECK(quick_took < 1500ms);
  auto answer = long_call.get();
  REQUIRE(answer.ok());
  CHECK(text_of(*answer).find("Steps: 4") != std::string::npos);
  CHECK(progress_seen == 4);
}

TEST_CASE("client: our own progress token replaces the caller's, other _meta passes through") {
  const std::string log = temp_log("meta");
  client c(options(probe(log)), {});
  std::vector<std::string> messages;
  request_options o;
  o.meta_json = R"({"progressToken":"client-token","example.com/trace":"t1"})";
  o.progress = [&](double, double, const std::string& text) { messages.push_back(text); };
  auto answer = c.request("tools/call", R"({"name":"progress","arguments":{"steps":2}})", o);
  REQUIRE(answer.ok());
  CHECK(messages == std::vector<std::string>{"step 1 of 2", "step 2 of 2"});
  const std::string recorded = read_file(log);
  CHECK(recorded.find(R"("example.com/trace":"t1")") != std::string::npos);
  CHECK(recorded.find("client-token") == std::string::npos);
  std::filesystem::remove(log);
}

TEST_CASE("client: cancelling sends notifications/cancelled, which the upstream sees") {
  const std::string log = temp_log("cancel");
  client c(options(probe(log)), {});
  REQUIRE(c.start().ok());
  request_options o;
  o.cancel = std::make_shared<cancel_flag>();
  auto canceller = std::async(std::launch::async, [&] {
    REQUIRE(eventually_contains(log, "wait_for_cancel"));
    o.cancel->cancel("the person pressed stop");
  });
  const auto started = std::chrono::steady_clock::now();
  auto answer = c.request("tools/call", R"({"name":"wait_for_cancel","arguments":{"ms":20000}})", o);
  canceller.get();
  REQUIRE(answer.status().code() == absl::StatusCode::kCancelled);
  CHECK(std::chrono::steady_clock::now() - started < 15s);
  CHECK(eventually_contains(log, R"("reason":"the person pressed stop")"));
  // The connection is still good afterwards.
  auto echo = c.request("tools/call", R"({"name":"echo","arguments":{"text":"still here"}})");
  REQUIRE(echo.ok());
  CHECK(text_of(*echo) == "echo: still here");
  std::filesystem::remove(log);
}

TEST_CASE("client: a killed upstream fails the call in flight with a clear error, and the next call restarts it") {
  const std::string log = temp_log("kill");
  std::atomic<int> closed_reports{0};
  client_callbacks callbacks;
  callbacks.closed = [&](const std::string&) { ++closed_reports; };
  client c(options(probe(log)), callbacks);
  REQUIRE(c.start().ok());
  const int first_pid = c.pid();
  REQUIRE(first_pid > 0);
  auto killer = std::async(std::launch::async, [&] {
    REQUIRE(eventually_contains(log, "wait_for_cancel"));
    ::kill(first_pid, SIGKILL);
  });
  auto answer = c.request("tools/call", R"({"name":"wait_for_cancel","arguments":{"ms":20000}})");
  killer.get();
  REQUIRE(answer.status().code() == absl::StatusCode::kUnavailable);
  const std::string why(answer.status().message());
  CHECK(why.find("was killed by signal 9") != std::string::npos);
  CHECK(why.find("upstream.mjs probe`") != std::string::npos);
  CHECK(closed_reports == 1);

  auto echo = c.request("tools/call", R"({"name":"echo","arguments":{"text":"again"}})");
  REQUIRE(echo.ok());
  CHECK(text_of(*echo) == "echo: again");
  CHECK(c.pid() != first_pid);

  auto gone = c.request("tools/call", R"({"name":"exit","arguments":{}})");
  REQUIRE(gone.status().code() == absl::StatusCode::kUnavailable);
  CHECK(std::string(gone.status().message()).find("exited with status 3") != std::string::npos);
  std::filesystem::remove(log);
}

TEST_CASE("client: list changes, log messages and elicitation reach the callbacks") {
  const std::string log = temp_log("events");
  std::mutex m;
  std::vector<std::string> notes;
  client_callbacks callbacks;
  callbacks.notification = [&](const std::string& method, const std::string& params) {
    std::lock_guard lock(m);
    notes.push_back(method + " " + params);
  };
  callbacks.request = [&](const std::string& method, const std::string& params) -> absl::StatusOr<std::string> {
    if (method != "elicitation/create" || params.find("Which colour?") == std::string::npos) {
      return absl::InvalidArgumentError("unexpected " + method);
    }
    return std::string(R"({"action":"accept","content":{"colour":"teal"}})");
  };
  client c(options(probe(log)), callbacks);
  auto added = c.request("tools/call", R"({"name":"add_tool","arguments":{}})");
  REQUIRE(added.ok());
  auto tools = c.list_all("tools/list", "tools");
  REQUIRE(tools.ok());
  CHECK(tools->back().find(R"("name":"added_1")") != std::string::npos);

  REQUIRE(c.request("tools/call", R"({"name":"log","arguments":{"text":"careful"}})").ok());
  auto asked = c.request("tools/call", R"({"name":"ask","arguments":{}})");
  REQUIRE(asked.ok());
  CHECK(text_of(*asked).find("teal") != std::string::npos);

  std::lock_guard lock(m);
  CHECK(std::find(notes.begin(), notes.end(), "notifications/tools/list_changed {}") != notes.end());
  bool logged = false;
  for (const auto& n : notes) logged |= n.find("notifications/message") == 0 && n.find("careful") != std::string::npos;
  CHECK(logged);
  std::filesystem::remove(log);
}

TEST_CASE("client: a program that cannot start, or never answers, gives a clear error and no hang") {
  client missing(options(upstream_spec{{"no-such-mcp-server-xyz"}}), {});
  auto s = missing.start();
  REQUIRE_FALSE(s.ok());
  CHECK(std::string(s.message()) == "could not start `no-such-mcp-server-xyz`: No such file or directory");

  auto o = options(upstream_spec{{"sleep", "30"}});
  o.start_timeout = 300ms;
  client silent(o, {});
  const auto started = std::chrono::steady_clock::now();
  auto t = silent.start();
  REQUIRE(t.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(std::string(t.message()).find("could not initialize the upstream `sleep 30`") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - started < 10s);
}

TEST_CASE("client: stopping while another thread starts the upstream ends both, every time") {
  // stop() closes the connection being started while start() closes it too, on its way out
  // with the failed initialize: both must return, whoever comes first.
  for (int round = 0; round < 20; ++round) {
    auto o = options(upstream_spec{{"sh", "-c", "cat > /dev/null"}});  // never answers, ends with its stdin
    o.start_timeout = 500ms;
    auto* c = new client(o, {});
    auto started = std::async(std::launch::async, [c] { return c->start(); });
    std::this_thread::sleep_for(std::chrono::microseconds(500 * (round % 6)));
    auto stopped = std::async(std::launch::async, [c] { c->stop(); });
    const bool ended =
        started.wait_for(10s) == std::future_status::ready && stopped.wait_for(10s) == std::future_status::ready;
    if (!ended) {
      // Leave the hung threads and the client behind; waiting for them would hang the suite.
      new auto(std::move(started));
      new auto(std::move(stopped));
      FAIL("round " << round << ": start() or stop() did not return within 10 s");
    }
    CHECK_FALSE(started.get().ok());
    delete c;
  }
}

namespace {

// A port nobody listens on right now: the kernel's pick for a socket bound to port 0.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// server-everything in its Streamable HTTP mode, on a port of its own, for one test.
class http_everything {
 public:
  http_everything() : port_(free_port()) {
    const std::string port_env = "PORT=" + std::to_string(port_);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setenv("PORT", std::to_string(port_).c_str(), 1);
      ::execl(REA_TEST_NODE, REA_TEST_NODE, REA_TEST_EVERYTHING, "streamableHttp", static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~http_everything() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }

 private:
  int port_;
  pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("client: server-everything over Streamable HTTP lists, calls, streams progress and asks") {
  http_everything server;
  std::atomic<int> asked{0};
  client_callbacks callbacks;
  callbacks.request = [&](const std::string& method, const std::string&) -> absl::StatusOr<std::string> {
    if (method != "elicitation/create") return absl::UnimplementedError(method);
    ++asked;
    return std::string(R"({"action":"accept","content":{"name":"Grace Hopper"}})");
  };
  upstream_spec spec;
  spec.url = server.url();
  client c(options(spec), callbacks);
  absl::Status started = absl::UnknownError("not tried");
  for (int i = 0; i < 100 && !started.ok(); ++i) {  // until the server listens
    started = c.start();
    if (!started.ok()) std::this_thread::sleep_for(100ms);
  }
  REQUIRE(started.ok());
  CHECK_FALSE(c.info()->instructions.empty());

  auto tools = c.list_all("tools/list", "tools");
  REQUIRE(tools.ok());
  std::string all;
  for (const auto& t : *tools) all += t;
  CHECK(all.find(R"("name":"echo")") != std::string::npos);

  auto echo = c.request("tools/call", R"({"name":"echo","arguments":{"message":"over http"}})");
  REQUIRE(echo.ok());
  CHECK(text_of(*echo) == "Echo: over http");

  std::vector<double> seen;
  std::mutex m;
  request_options o;
  o.progress = [&](double p, double, const std::string&) {
    std::lock_guard lock(m);
    seen.push_back(p);
  };
  auto slow =
      c.request("tools/call", R"({"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3}})", o);
  REQUIRE(slow.ok());
  CHECK(seen == std::vector<double>{1, 2, 3});

  auto elicited = c.request("tools/call", R"({"name":"trigger-elicitation-request","arguments":{}})");
  INFO(elicited.status().message());
  REQUIRE(elicited.ok());
  CHECK(asked == 1);
  CHECK(elicited->find("Name: Grace Hopper") != std::string::npos);

  c.stop();
}

TEST_CASE("client: an HTTP upstream that is not there fails with the reason") {
  upstream_spec spec;
  spec.url = "http://127.0.0.1:1/mcp";
  client c(options(spec), {});
  auto s = c.start();
  REQUIRE_FALSE(s.ok());
  CHECK(std::string(s.message()).find("could not reach the upstream http://127.0.0.1:1/mcp") != std::string::npos);
  upstream_spec tls;
  tls.url = "https://example.com/mcp";
  client secure(options(tls), {});
  CHECK(secure.start().code() == absl::StatusCode::kUnimplemented);
}
