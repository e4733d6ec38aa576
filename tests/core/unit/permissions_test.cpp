#include <catch2/catch.hpp>

#include "host/policy/approval.hpp"
#include "host/policy/permissions.hpp"

using namespace toolhost;

namespace {
policy::tool_request request(config::permission setting, bool suggestion = false) {
  return {"rename_function", "eleven",   "eleven.rename",     "Rename functions and variables",
          setting,           suggestion, "/etc/toolhost.toml"};
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

TEST_CASE("the question names the call's arguments: a rename reads old -> new, long values are cut", "[permissions]") {
  CHECK(policy::describe_call("rename_function", R"({"function":"main","new_name":"real_main"})") ==
        "rename_function main \u2192 real_main");
  CHECK(policy::describe_call("propose_patch", R"({"address":"0x401000","bytes":"90 90"})") ==
        "propose_patch address: 0x401000, bytes: 90 90");
  CHECK(policy::describe_call("count", R"({"to":3})") == "count to: 3");
  CHECK(policy::describe_call("count", "{}") == "count");
  const std::string long_value(500, 'x');
  const std::string cut = policy::describe_call("add_note", R"({"text":")" + long_value + R"(\nnext"})");
  CHECK(cut.size() < 100);
  CHECK(cut.find('\n') == std::string::npos);
  CHECK(cut.rfind("\u2026") == cut.size() - 3);
}

TEST_CASE("'allow for this session' is offered, read, and remembered by the caller", "[permissions]") {
  asker a;
  a.reply = policy::answer{"accept", true, true};
  auto d = policy::authorize(request(config::permission::ask), a.fn());
  CHECK(d.allowed);
  CHECK(d.remember_for_session);
  CHECK(
      policy::read_approval(true, R"({"action":"accept","content":{"approve":true,"for_session":true}})").for_session);
  // Ticking only "for this session" without "approve" approves nothing.
  const auto only_session =
      policy::read_approval(true, R"({"action":"accept","content":{"approve":false,"for_session":true}})");
  CHECK_FALSE(only_session.approved);
  CHECK_FALSE(only_session.for_session);
  auto again = request(config::permission::ask);
  again.allowed_for_session = true;
  CHECK(policy::authorize(again, a.fn()).allowed);
  CHECK(a.asked == 1);
  // A never row stays never, whatever was answered before.
  auto never = request(config::permission::never);
  never.allowed_for_session = true;
  CHECK_FALSE(policy::authorize(never, a.fn()).allowed);
}
