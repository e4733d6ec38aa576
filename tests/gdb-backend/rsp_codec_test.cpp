// The RSP codec against packets written out by hand from the protocol description.
#include <catch2/catch.hpp>

#include <toolhost/rsp/hex.hpp>
#include <toolhost/rsp/packet.hpp>

#include "stop_reply.hpp"
#include "target_description.hpp"

using namespace toolhost;

namespace {
std::vector<rsp::event> decode_all(std::string_view wire) {
  rsp::decoder d;
  d.feed(wire);
  std::vector<rsp::event> out;
  while (d.has_event()) out.push_back(d.next());
  return out;
}
}  // namespace

TEST_CASE("frame adds the modulo-256 checksum", "[rsp]") {
  CHECK(rsp::frame("OK") == "$OK#9a");
  CHECK(rsp::frame("") == "$#00");
  CHECK(rsp::frame("qSupported") == "$qSupported#37");
}

TEST_CASE("decoder yields packets, acks and the interrupt byte", "[rsp]") {
  auto events = decode_all("+$OK#9a-\x03");
  REQUIRE(events.size() == 4);
  CHECK(events[0].type == rsp::event::kind::ack);
  CHECK(events[1].type == rsp::event::kind::packet);
  CHECK(events[1].payload == "OK");
  CHECK(events[2].type == rsp::event::kind::nack);
  CHECK(events[3].type == rsp::event::kind::interrupt);
}

TEST_CASE("decoder rejects a wrong checksum", "[rsp]") {
  auto events = decode_all("$OK#00");
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == rsp::event::kind::bad_packet);
}

TEST_CASE("decoder handles a packet split across reads", "[rsp]") {
  rsp::decoder d;
  d.feed("$O");
  CHECK_FALSE(d.has_event());
  CHECK(d.in_packet());
  d.feed("K#9");
  CHECK_FALSE(d.has_event());
  d.feed("a");
  REQUIRE(d.has_event());
  CHECK(d.next().payload == "OK");
}

TEST_CASE("run-length encoding expands", "[rsp]") {
  // "0* " is '0' followed by 3 more (' ' is 32 = 29 + 3): four zeros.
  std::string out;
  REQUIRE(rsp::unescape("0* ", out, 100));
  CHECK(out == "0000");
  REQUIRE(rsp::unescape("ab*\"c", out, 100));  // '"' = 34: five more b's
  CHECK(out == "abbbbbbc");
  auto events = decode_all(rsp::frame("x0* y"));
  REQUIRE(events.size() == 1);
  CHECK(events[0].payload == "x0000y");
}

TEST_CASE("escapes round-trip and malformed bodies fail", "[rsp]") {
  const std::string binary = std::string("a$b#c}d*e", 9);
  std::string out;
  REQUIRE(rsp::unescape(rsp::escape_binary(binary), out, 100));
  CHECK(out == binary);
  CHECK_FALSE(rsp::unescape("abc}", out, 100));    // dangling escape
  CHECK_FALSE(rsp::unescape("*!", out, 100));      // run with nothing before it
  CHECK_FALSE(rsp::unescape("a*\x10", out, 100));  // run length below 3
  CHECK_FALSE(rsp::unescape("a*~", out, 10));      // over the limit
}

TEST_CASE("hex helpers", "[rsp]") {
  CHECK(rsp::to_hex("\x01\xab", 2) == "01ab");
  auto b = rsp::from_hex("01ab");
  REQUIRE(b);
  CHECK((*b)[1] == 0xab);
  bool unavailable = false;
  auto x = rsp::from_hex("xx01", &unavailable);
  REQUIRE(x);
  CHECK(unavailable);
  CHECK_FALSE(rsp::from_hex("0"));
  CHECK_FALSE(rsp::from_hex("zz"));
  CHECK(rsp::parse_number("7fff0010") == 0x7fff0010u);
  CHECK_FALSE(rsp::parse_number(""));
  CHECK(rsp::number(0x1234) == "1234");
  CHECK(rsp::number(0) == "0");
}

TEST_CASE("stop replies carry the thread, breakpoint kind and watch address", "[rsp]") {
  auto r = gdb::parse_stop_reply("T05thread:p1f.2a;swbreak:;10:0011223344556677;", 0x10);
  REQUIRE(r);
  CHECK(r->signal == 5);
  CHECK(r->thread == 0x2a);
  CHECK(r->swbreak);
  REQUIRE(r->pc);
  CHECK(*r->pc == 0x7766554433221100ull);
  auto w = gdb::parse_stop_reply("T05watch:601040;thread:3;");
  REQUIRE(w);
  CHECK(w->watch == gdb::stop_reply::watch_kind::write);
  CHECK(w->watch_address == 0x601040);
  CHECK(w->thread == 3);
  auto exited = gdb::parse_stop_reply("W2a");
  REQUIRE(exited);
  CHECK(exited->type == gdb::stop_reply::kind::exited);
  CHECK(exited->signal == 42);
  CHECK_FALSE(gdb::parse_stop_reply("OK"));
  CHECK_FALSE(gdb::parse_stop_reply("T"));
}

TEST_CASE("target description follows includes and numbers registers", "[rsp]") {
  auto read = [](std::string_view annex) -> absl::StatusOr<std::string> {
    if (annex == "target.xml") {
      return std::string(R"(<?xml version="1.0"?><target><architecture>i386:x86-64</architecture>)"
                         R"(<xi:include href="core.xml"/></target>)");
    }
    if (annex == "core.xml") {
      return std::string(R"(<feature name="core"><reg name="rax" bitsize="64" type="int64"/>)"
                         R"(<reg name="rip" bitsize="64" type="code_ptr"/><!-- <reg name="rip_base" bitsize="64"/> -->)"
                         R"(<reg name="eflags" bitsize="32"/>)"
                         R"(<reg name="cs" bitsize="32" regnum="20"/></feature>)");
    }
    return absl::NotFoundError("no such annex");
  };
  auto d = gdb::read_target_description(read);
  REQUIRE(d.ok());
  CHECK(d->architecture == "i386:x86-64");
  REQUIRE(d->registers.size() == 4);
  CHECK(d->registers[1].name == "rip");
  CHECK(d->registers[1].role == "pc");
  CHECK(d->registers[1].offset == 8);
  CHECK(d->registers[2].role == "flags");
  CHECK(d->registers[3].regnum == 20);
  CHECK(d->registers[3].offset == 20);
  auto missing = gdb::read_target_description(
      [](std::string_view) -> absl::StatusOr<std::string> { return absl::NotFoundError("nothing"); });
  CHECK_FALSE(missing.ok());
}
