// read_cache against a plain byte array standing for a target's memory, readable up to a limit:
// every read equals the uncached one, and the requests it makes are the ones it must make.
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "toolhost/kd/open_options.h"
#include "toolhost/kd/read_cache.h"

namespace {

using toolhost::kd::read_cache;

struct fake_memory {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(64 * 1024);
  size_t readable = 40 * 1024 + 100;  // nothing readable from here on
  std::vector<std::pair<uint64_t, size_t>> requests;
  fake_memory() {
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + (i >> 8));
  }
  read_cache::fetch_fn fetch() {
    return [this](uint64_t address, std::span<uint8_t> into) -> absl::StatusOr<size_t> {
      requests.emplace_back(address, into.size());
      const size_t n = address >= readable ? 0 : std::min(into.size(), static_cast<size_t>(readable - address));
      std::copy_n(bytes.begin() + static_cast<long>(address), n, into.begin());
      return n;
    };
  }
  size_t direct(uint64_t address, std::span<uint8_t> into) const {
    const size_t n = address >= readable ? 0 : std::min(into.size(), static_cast<size_t>(readable - address));
    std::copy_n(bytes.begin() + static_cast<long>(address), n, into.begin());
    return n;
  }
};

}  // namespace

TEST_CASE("kd read cache: reads equal the target's, one request per run of missing blocks", "[kd][cache]") {
  fake_memory m;
  read_cache cache;
  std::vector<uint8_t> a(8), b(8);

  // A PTE-sized read fetches its block; the next read in that block costs nothing.
  REQUIRE(*cache.read(0x1238, a, m.fetch()) == 8);
  m.direct(0x1238, b);
  CHECK(a == b);
  CHECK(m.requests == std::vector<std::pair<uint64_t, size_t>>{{0x1000, 1024}});
  REQUIRE(*cache.read(0x1010, a, m.fetch()) == 8);
  m.direct(0x1010, b);
  CHECK(a == b);
  CHECK(m.requests.size() == 1);

  // A read over a held block and three missing ones: one request for the three.
  std::vector<uint8_t> big(2500), want(2500);
  REQUIRE(*cache.read(0x1300, big, m.fetch()) == 2500);
  m.direct(0x1300, want);
  CHECK(big == want);
  CHECK(m.requests.back() == std::pair<uint64_t, size_t>{0x1400, 3072});

  // Short at the first unreadable byte, as the target is; the partial block is not kept.
  std::vector<uint8_t> edge(300), edge_want(300);
  CHECK(*cache.read(m.readable - 50, edge, m.fetch()) == 50);
  CHECK(m.direct(m.readable - 50, edge_want) == 50);
  CHECK(std::equal(edge.begin(), edge.begin() + 50, edge_want.begin()));
  const size_t before = m.requests.size();
  CHECK(*cache.read(m.readable - 50, edge, m.fetch()) == 50);
  CHECK(m.requests.size() == before + 1);
  CHECK(*cache.read(m.readable + 10, edge, m.fetch()) == 0);

  // Large reads go straight to the target; clear() forgets everything.
  std::vector<uint8_t> huge(read_cache::kLargestCached + 1);
  REQUIRE(*cache.read(0, huge, m.fetch()) == huge.size());
  CHECK(m.requests.back() == std::pair<uint64_t, size_t>{0, huge.size()});
  cache.clear();
  CHECK(cache.blocks() == 0);
  const size_t after_clear = m.requests.size();
  REQUIRE(*cache.read(0x1238, a, m.fetch()) == 8);
  CHECK(m.requests.size() == after_clear + 1);
}

TEST_CASE("kd options: read_cache is true or false, and nothing else", "[kd][cache]") {
  toolhost::kd::link_tuning link{std::chrono::milliseconds(250), 5};
  toolhost::kd::target_options target;
  CHECK(target.read_cache);
  REQUIRE(toolhost::kd::read_open_options(R"({"read_cache":false})", "kd", link, target).ok());
  CHECK_FALSE(target.read_cache);
  const auto bad = toolhost::kd::read_open_options(R"({"read_cache":1})", "kd", link, target);
  CHECK(std::string(bad.message()) == "The option \"read_cache\" must be true or false.");
}
