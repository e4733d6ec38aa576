// MASM expressions, against values a WinDbg user would expect.
#include <catch2/catch.hpp>

#include <map>

#include "command_line.hpp"
#include "expression.hpp"

using namespace toolhost::debugger;

namespace {

class fake_context : public expression_context {
 public:
  std::optional<uint64_t> register_value(std::string_view name) override {
    if (name == "rax") return 0x10;
    if (name == "rsp") return 0x7ffe0000;
    return std::nullopt;
  }
  absl::StatusOr<uint64_t> symbol_address(std::string_view name) override {
    if (name == "demo!main") return 0x401000;
    if (name == "main") return 0x401000;
    return absl::NotFoundError("no such symbol");
  }
  absl::StatusOr<uint64_t> read_memory(uint64_t address, int size) override {
    if (address == 0x7ffe0000)
      return size == 8 ? 0x1122334455667788ull : (0x1122334455667788ull & ((1ull << (size * 8)) - 1));
    return absl::NotFoundError("unmapped");
  }
};

uint64_t eval_ok(std::string_view text) {
  fake_context c;
  auto v = evaluate(text, c);
  INFO(text << ": " << v.status().message());
  REQUIRE(v.ok());
  return *v;
}

}  // namespace

TEST_CASE("numbers are hexadecimal unless prefixed", "[expression]") {
  CHECK(eval_ok("10") == 0x10);
  CHECK(eval_ok("0x10") == 0x10);
  CHECK(eval_ok("0n10") == 10);
  CHECK(eval_ok("0t10") == 8);
  CHECK(eval_ok("0y101") == 5);
  CHECK(eval_ok("00007ff8`12345678") == 0x00007ff812345678ull);
  CHECK(eval_ok("add") == 0xadd);  // a bare hex word is a number first
  CHECK(eval_ok("'A'") == 0x41);
}

TEST_CASE("operators follow MASM precedence", "[expression]") {
  CHECK(eval_ok("1 + 2 * 3") == 7);
  CHECK(eval_ok("(1 + 2) * 3") == 9);
  CHECK(eval_ok("10 / 3") == 5);
  CHECK(eval_ok("10 % 3") == 1);
  CHECK(eval_ok("10 mod 3") == 1);
  CHECK(eval_ok("1 << 4") == 0x10);
  CHECK(eval_ok("-1") == UINT64_MAX);
  CHECK(eval_ok("~0 >> 3c") == 0xf);
  CHECK(eval_ok("-10 >>> 1") == static_cast<uint64_t>(-8));
  CHECK(eval_ok("5 == 5") == 1);
  CHECK(eval_ok("5 = 6") == 0);
  CHECK(eval_ok("5 != 6") == 1);
  CHECK(eval_ok("2 < 3 and 3 < 4") == 1);
  CHECK(eval_ok("f0 | f") == 0xff);
  CHECK(eval_ok("ff & f0 ^ 0f") == (0xff & (0xf0 ^ 0x0f)));
  CHECK(eval_ok("!0") == 1);
}

TEST_CASE("registers, symbols and memory", "[expression]") {
  CHECK(eval_ok("@rax") == 0x10);
  CHECK(eval_ok("rax+8") == 0x18);
  CHECK(eval_ok("demo!main") == 0x401000);
  CHECK(eval_ok("demo!main+0x10") == 0x401010);
  CHECK(eval_ok("poi(rsp)") == 0x1122334455667788ull);
  CHECK(eval_ok("by(rsp)") == 0x88);
  CHECK(eval_ok("wo(@rsp)") == 0x7788);
  CHECK(eval_ok("dwo(rsp)") == 0x55667788);
  CHECK(eval_ok("hi(12345678)") == 0x1234);
  CHECK(eval_ok("low(12345678)") == 0x5678);
}

TEST_CASE("errors say what is wrong", "[expression]") {
  fake_context c;
  auto bad = evaluate("nosuch!thing", c);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("nosuch!thing") != std::string::npos);
  CHECK_FALSE(evaluate("1 +", c).ok());
  CHECK_FALSE(evaluate("(1 + 2", c).ok());
  CHECK_FALSE(evaluate("1 / 0", c).ok());
  CHECK_FALSE(evaluate("@nosuch", c).ok());
  CHECK_FALSE(evaluate("poi(10)", c).ok());
  CHECK_FALSE(evaluate("1 2", c).ok());
  CHECK_FALSE(evaluate("ffffffffffffffffff", c).ok());
}

TEST_CASE("a prefix stops where the expression ends", "[expression]") {
  fake_context c;
  size_t pos = 0;
  const std::string_view text = "rsp + 8 L4";
  auto v = evaluate_prefix(text, pos, c);
  REQUIRE(v.ok());
  CHECK(*v == 0x7ffe0008);
  CHECK(text.substr(pos) == "L4");
  pos = 0;
  const std::string_view bp = "demo!main 3";
  REQUIRE(evaluate_prefix(bp, pos, c).ok());
  CHECK(bp.substr(pos) == "3");
}

TEST_CASE("lines split on ';' outside quotes and commands split from arguments", "[command_line]") {
  auto parts = split_commands("break; bp demo!main; g");
  REQUIRE(parts.size() == 3);
  CHECK(parts[1] == "bp demo!main");
  auto quoted = split_commands("bp /w \"rax == 1; 2\" main ; k");
  REQUIRE(quoted.size() == 2);
  CHECK(quoted[0] == "bp /w \"rax == 1; 2\" main");
  CHECK(split_commands("  ;; ").empty());
  auto c = parse_command("DQ rsp L8");
  CHECK(c.name == "dq");
  CHECK(c.args == "rsp L8");
  auto t = parse_command("~1s");
  CHECK(t.name == "~");
  CHECK(t.args == "1s");
  auto h = parse_command(".help bp");
  CHECK(h.name == ".help");
  CHECK(h.args == "bp");
  auto q = parse_command("?1+2");
  CHECK(q.name == "?");
  CHECK(q.args == "1+2");
  auto b = parse_command("bp/1 main");
  CHECK(b.name == "bp");
  CHECK(b.args == "/1 main");
}
