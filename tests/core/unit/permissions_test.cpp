#include <catch2/catch.hpp>

#include "host/policy/permissions.hpp"

using namespace toolhost;

namespace {
policy::tool_request request(config::permission setting, bool suggestion = false) {
  return {"rename_function", "eleven", "eleven.rename", "Rename functions and variables", setting, suggestion,
          "/etc/toolhost.toml"};
}
struct asker {
  std::optional<policy::answer> reply;
  int asked = 0;
  policy::ask_fn fn() {
    return [this](const std::string& message, const std::string& schema) {
      ++asked;
      CHECK(message.find("rename_function") != std::string::npos);
      CHECK(schema.find("\"approve\"") != std::string::npos);
      return reply;
    };
  }
};
}  // namespace

TEST_CASE("allow runs without asking; never refuses naming the row", "[permissions]") {
  asker a;
  CHECK(policy::authorize(request(config::permission::allow), a.fn()).allowed);
  auto d = policy::authorize(request(config::permission::never), a.fn());
  CHECK_FALSE(d.allowed);
  CHECK(d.message.find("\"Rename functions and variables\" is set to Never") != std::string::npos);
  CHECK(d.message.find("/etc/toolhost.toml") != std::string::npos);
  CHECK(a.asked == 0);
}

TEST_CASE("ask proceeds only on an explicit accept", "[permissions]") {
  asker a;
  a.reply = policy::answer{"accept", true};
  CHECK(policy::authorize(request(config::permission::ask), a.fn()).allowed);
  a.reply = policy::answer{"accept", false};
  CHECK_FALSE(policy::authorize(request(config::permission::ask), a.fn()).allowed);
  a.reply = policy::answer{"decline", false};
  CHECK_FALSE(policy::authorize(request(config::permission::ask), a.fn()).allowed);
  a.reply = policy::answer{"cancel", false};
  CHECK_FALSE(policy::authorize(request(config::permission::ask), a.fn()).allowed);
  CHECK(a.asked == 4);
}

TEST_CASE("a client that cannot be asked means refusal, never approval", "[permissions]") {
  asker a;  // reply stays nullopt
  auto d = policy::authorize(request(config::permission::ask), a.fn());
  CHECK_FALSE(d.allowed);
  CHECK(d.message.find("cannot ask the user") != std::string::npos);
  CHECK(d.message.find("\"eleven.rename\"") != std::string::npos);
}

TEST_CASE("a tool that only files a suggestion never asks", "[permissions]") {
  asker a;
  CHECK(policy::authorize(request(config::permission::ask, true), a.fn()).allowed);
  CHECK(a.asked == 0);
  CHECK_FALSE(policy::authorize(request(config::permission::never, true), a.fn()).allowed);
}
