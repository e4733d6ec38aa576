#include <catch2/catch.hpp>

#include "host/mcp/pagination.hpp"

using toolhost::mcp::paginate;

namespace {
std::vector<std::pair<std::string, std::string>> items(std::initializer_list<const char*> names) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* n : names) out.emplace_back(n, std::string("{\"name\":\"") + n + "\"}");
  return out;
}
}  // namespace

TEST_CASE("pages follow each other until the list ends", "[pagination]") {
  auto list = items({"a", "b", "c", "d", "e"});
  std::vector<std::string> seen;
  std::string cursor;
  int pages = 0;
  do {
    auto p = paginate(list, cursor, 2);
    REQUIRE(p.ok());
    for (size_t i = p->begin; i < p->end; ++i) seen.push_back(list[i].first);
    cursor = p->next_cursor;
    ++pages;
  } while (!cursor.empty());
  CHECK(pages == 3);
  CHECK(seen == std::vector<std::string>{"a", "b", "c", "d", "e"});
}

TEST_CASE("a cursor stays valid when an earlier item disappears", "[pagination]") {
  auto list = items({"a", "b", "c", "d"});
  auto first = paginate(list, "", 2);
  REQUIRE(first.ok());
  auto shorter = items({"b", "c", "d"});  // "a" went away between the two pages
  auto second = paginate(shorter, first->next_cursor, 2);
  REQUIRE(second.ok());
  CHECK(shorter[second->begin].first == "c");  // nothing skipped, nothing repeated
}

TEST_CASE("a cursor this server did not issue is refused", "[pagination]") {
  auto p = paginate(items({"a"}), "not-a-cursor!", 2);
  REQUIRE_FALSE(p.ok());
  CHECK(std::string(p.status().message()).find("cursor") != std::string::npos);
}
