// Paging of long results: the footer, reading by offset and by filter.
#include <catch2/catch.hpp>

#include "output_store.hpp"

using toolhost::debugger::output_store;

TEST_CASE("short results pass through, long ones are paged", "[output]") {
  output_store store;
  CHECK(store.page("short\n") == "short\n");
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i) + " of the long result\n";
  const std::string page = store.page(text);
  CHECK(page.size() < 25000);
  const auto footer = page.rfind("[output 1: 2000 lines, offsets 0-");
  REQUIRE(footer != std::string::npos);
  CHECK(page.find("; the output tool reads on from offset ") != std::string::npos);
  CHECK(page.find("or with a filter finds lines in it]") != std::string::npos);
  // The footer's K+1 is where reading on starts.
  const size_t dash = page.find('-', footer);
  const int last = std::stoi(page.substr(dash + 1));
  CHECK(page.find("line " + std::to_string(last) + " of") != std::string::npos);
  CHECK(page.find("line " + std::to_string(last + 1) + " of") == std::string::npos);
  auto next = store.read(1, last + 1, 3, "");
  REQUIRE(next.ok());
  CHECK(next->find(std::to_string(last + 1) + ": line " + std::to_string(last + 1) + " of") == 0);
  CHECK(next->find("more from offset " + std::to_string(last + 4)) != std::string::npos);
}

TEST_CASE("a filter finds matching lines case-insensitively with their offsets", "[output]") {
  output_store store;
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += (i == 1234 ? "the NEEDLE is here" : "hay " + std::to_string(i)) + std::string(10, 'x') + "\n";
  store.page(text);
  auto found = store.read(1, 0, 0, "needle");
  REQUIRE(found.ok());
  CHECK(found->find("1234: the NEEDLE is here") == 0);
  CHECK(found->find("end]") != std::string::npos);
  auto none = store.read(1, 0, 0, "absent");
  REQUIRE(none.ok());
  CHECK(none->find("no line matches") != std::string::npos);
  CHECK_FALSE(store.read(7, 0, 0, "").ok());
  CHECK_FALSE(store.read(1, 999999, 0, "").ok());
}
