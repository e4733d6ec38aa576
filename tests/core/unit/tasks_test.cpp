#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <rapidjson/document.h>

#include "host/mcp/tasks.hpp"

using toolhost::mcp::task;
using toolhost::mcp::task_era;
using toolhost::mcp::task_status;
using toolhost::mcp::task_store;

namespace {

// What a watcher was told, in order.
struct heard {
  std::mutex mutex;
  std::vector<std::string> told;
  task::watcher watcher() {
    return [this](const std::string& json) {
      std::lock_guard lock(mutex);
      told.push_back(json);
    };
  }
  size_t count() {
    std::lock_guard lock(mutex);
    return told.size();
  }
  std::string at(size_t i) {
    std::lock_guard lock(mutex);
    return told.at(i);
  }
};

bool within_seconds(const std::function<bool()>& check) {
  for (int i = 0; i < 500; ++i) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a watcher hears each change of status once, the terminal one last with the result", "[tasks]") {
  task_store store;
  auto t = store.create("client", "slow", task_era::v2026, 0, nullptr);
  REQUIRE(t);
  heard h;
  REQUIRE(t->watch(500, h.watcher()) != 0);

  t->set_message("1/3: computing");  // a status message alone is no change of status
  CHECK(h.count() == 0);

  std::thread asker(
      [&] { t->ask(R"({"method":"elicitation/create","params":{"message":"Go on?"}})", [] { return false; }); });
  REQUIRE(within_seconds([&] { return h.count() == 1; }));
  CHECK(has(h.at(0), R"("status":"input_required")"));
  CHECK(has(h.at(0), R"("inputRequests":{"input-1":{"method":"elicitation/create")"));
  CHECK(has(h.at(0), R"("pollIntervalMs":500)"));

  rapidjson::Document answer;
  answer.Parse(R"({"input-1":{"action":"accept","content":{}}})");
  t->answer(answer);
  asker.join();
  REQUIRE(h.count() == 2);
  CHECK(has(h.at(1), R"("status":"working")"));
  CHECK(has(h.at(1), R"("statusMessage":"1/3: computing")"));

  store.settle(t, task_status::completed, R"({"content":[{"type":"text","text":"done"}]})");
  REQUIRE(h.count() == 3);
  CHECK(has(h.at(2), R"("status":"completed")"));
  CHECK(has(h.at(2), R"("result":{"content":[{"type":"text","text":"done"}]})"));

  // Terminal: nothing more to hear, and nobody can start watching.
  store.cancel(t);
  CHECK(h.count() == 3);
  CHECK(t->watch(500, h.watcher()) == 0);
}

TEST_CASE("a task takes a bounded number of watchers, and one that stops watching hears nothing", "[tasks]") {
  task_store store;
  auto t = store.create("client", "slow", task_era::v2026, 0, nullptr);
  REQUIRE(t);
  std::vector<heard> all(task::kMaxWatchers);
  std::vector<uint64_t> ids;
  for (auto& h : all) ids.push_back(t->watch(500, h.watcher()));
  CHECK(std::find(ids.begin(), ids.end(), 0u) == ids.end());
  heard late;
  CHECK(t->watch(500, late.watcher()) == 0);

  t->unwatch(ids.front());
  CHECK(t->watch(500, late.watcher()) != 0);

  store.cancel(t);
  CHECK(all.front().count() == 0);
  CHECK(late.count() == 1);
  CHECK(has(late.at(0), R"("status":"cancelled")"));
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i].count() == 1);
}
