// Unit tests of the Streamable HTTP building blocks that need no network: where toolhost agrees
// to listen, the Host/Origin/token checks, request heads, session ids, SSE stream replay and its
// bounds, and the connection table.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "host/transport/http_connections.hpp"
#include "host/transport/http_security.hpp"
#include "host/transport/http_session.hpp"
#include "host/transport/http_stream.hpp"

using namespace toolhost::transport::http;

TEST_CASE("parse_bind accepts loopback addresses and refuses others without --unsafe-http") {
  auto v4 = parse_bind("127.0.0.1:8808", false);
  REQUIRE(v4.ok());
  CHECK(v4->host == "127.0.0.1");
  CHECK(v4->port == 8808);
  CHECK(v4->loopback);

  auto v6 = parse_bind("[::1]:0", false);
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->loopback);

  auto named = parse_bind("localhost:9000", false);
  REQUIRE(named.ok());
  CHECK(named->host == "127.0.0.1");

  auto other = parse_bind("127.8.9.10:1", false);
  REQUIRE(other.ok());
  CHECK(other->loopback);  // all of 127/8 is loopback

  auto any = parse_bind("0.0.0.0:8808", false);
  REQUIRE_FALSE(any.ok());
  CHECK(std::string(any.status().message()).find("not a loopback address") != std::string::npos);
  CHECK(std::string(any.status().message()).find("--unsafe-http") != std::string::npos);
  CHECK_FALSE(parse_bind("[::]:8808", false).ok());

  auto unsafe = parse_bind("0.0.0.0:8808", true);
  REQUIRE(unsafe.ok());
  CHECK_FALSE(unsafe->loopback);
}

TEST_CASE("parse_bind explains malformed addresses") {
  for (const char* bad :
       {"127.0.0.1", ":80", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:8x", "[::1]8808", "example.com:80", "::1:80"}) {
    INFO(bad);
    CHECK_FALSE(parse_bind(bad, true).ok());
  }
}

TEST_CASE("request_guard: Host must name loopback unless the server listens elsewhere on purpose") {
  request_guard guard("", {}, false);
  for (const char* ok : {"127.0.0.1", "127.0.0.1:8808", "localhost", "LOCALHOST:1", "[::1]:8808", "[::1]"}) {
    INFO(ok);
    CHECK(guard.host_allowed(ok));
  }
  for (const char* bad : {"", "evil.example.com", "evil.example.com:8808", "127.0.0.1.evil.example.com", "10.0.0.1:80",
                          "[::1", "[::1]x"}) {
    INFO(bad);
    CHECK_FALSE(guard.host_allowed(bad));
  }
  request_guard open("", {}, true);
  CHECK(open.host_allowed("server.lan:8808"));
}

TEST_CASE("request_guard: Origin is absent, loopback, or configured") {
  request_guard guard("", {"https://App.Example.org"}, false);
  CHECK(guard.origin_allowed(""));
  CHECK(guard.origin_allowed("http://localhost:3000"));
  CHECK(guard.origin_allowed("http://127.0.0.1"));
  CHECK(guard.origin_allowed("https://[::1]:8443"));
  CHECK(guard.origin_allowed("https://app.example.org"));
  CHECK_FALSE(guard.origin_allowed("http://evil.example.com"));
  CHECK_FALSE(guard.origin_allowed("http://localhost.evil.example.com"));
  CHECK_FALSE(guard.origin_allowed("null"));
  CHECK_FALSE(guard.origin_allowed("file://localhost"));
  CHECK_FALSE(guard.origin_allowed("https://app.example.org.evil.example.com"));
}

TEST_CASE("request_guard: the bearer token must match exactly") {
  request_guard none("", {}, false);
  CHECK_FALSE(none.needs_token());
  CHECK(none.authorized(""));

  request_guard guard("s3cret", {}, false);
  CHECK(guard.needs_token());
  CHECK(guard.authorized("Bearer s3cret"));
  CHECK(guard.authorized("bearer s3cret"));
  CHECK_FALSE(guard.authorized(""));
  CHECK_FALSE(guard.authorized("Bearer "));
  CHECK_FALSE(guard.authorized("Bearer s3cre"));
  CHECK_FALSE(guard.authorized("Bearer s3crett"));
  CHECK_FALSE(guard.authorized("Bearer s3creT"));
  CHECK_FALSE(guard.authorized("Bearer S3CRET"));
  CHECK_FALSE(guard.authorized(std::string("Bearer s3cre\0", 13)));
  CHECK_FALSE(guard.authorized("Basic s3cret"));
  CHECK_FALSE(guard.authorized("s3cret"));
}

TEST_CASE("session ids are 32 hex digits and do not repeat") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = random_session_id();
    REQUIRE(id.size() == 32);
    REQUIRE(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("a stream numbers its events and replays those after a Last-Event-ID") {
  stream s(7, 100);
  int wakes = 0;
  const uint64_t gen = s.attach([&] { ++wakes; });
  s.push("a", false);
  s.push("b", false);
  s.push("c", true);
  s.push("ignored after the end", false);
  CHECK(wakes == 3);
  CHECK(s.ended());
  CHECK(s.event_id(2) == "7-2");

  auto all = s.take(0);
  REQUIRE(all.events.size() == 3);
  CHECK(all.events[0].data == "a");
  CHECK(all.events[2].seq == 3);
  CHECK(all.ended);

  auto after = s.take(1);
  REQUIRE(after.events.size() == 2);
  CHECK(after.events[0].data == "b");

  // A resuming connection replaces the first one, which is told so it can finish.
  int old_wakes = wakes;
  const uint64_t gen2 = s.attach([] {});
  CHECK(wakes == old_wakes + 1);
  CHECK_FALSE(s.is_current(gen));
  CHECK(s.is_current(gen2));
  s.detach(gen);  // a stale detach changes nothing
  CHECK(s.is_current(gen2));
}

TEST_CASE("the standalone stream keeps only its newest events") {
  stream s(0, 3);
  for (int i = 1; i <= 5; ++i) s.push(std::to_string(i), false);
  auto kept = s.take(0);
  REQUIRE(kept.events.size() == 3);
  CHECK(kept.events.front().data == "3");
  CHECK(kept.events.front().seq == 3);
  CHECK_FALSE(kept.ended);
  s.mark_delivered(4);
  s.mark_delivered(2);
  CHECK(s.delivered() == 4);
  s.end();
  CHECK(s.take(5).ended);
}

TEST_CASE("a stream keeps at most its byte budget for replay, and never drops the answer") {
  stream s(3, 100);
  for (int i = 0; i < 50; ++i) s.push(std::string(10, 'p'), false);
  CHECK(s.bytes() <= 100);
  CHECK(s.dropped() == 40);
  s.push(std::string(500, 'r'), true);  // the answer, bigger than the whole budget
  auto kept = s.take(0);
  REQUIRE_FALSE(kept.events.empty());
  CHECK(kept.events.back().data.size() == 500);
  CHECK(kept.events.back().seq == 51);
  CHECK(kept.ended);
  s.forget();
  CHECK(s.bytes() == 0);
  CHECK(s.take(0).events.empty());
}

TEST_CASE("valid_host_header takes a host and an optional port, nothing else") {
  for (const char* ok : {"localhost", "localhost:8808", "127.0.0.1:1", "[::1]:8808", "[::1]", "a.b-c_d~e:65535"}) {
    INFO(ok);
    CHECK(valid_host_header(ok));
  }
  for (const char* bad : {"", "localhost:1@evil.com", "user@localhost", "localhost:65536", "localhost:8x", "local host",
                          "localhost/path", "[::1", "[::1]x", "[evil]:80", "::1", "%6cocalhost"}) {
    INFO(bad);
    CHECK_FALSE(valid_host_header(bad));
  }
  request_guard guard("", {}, false);
  CHECK_FALSE(guard.host_allowed("localhost:1@evil.com"));
  CHECK_FALSE(guard.origin_allowed("http://localhost@evil.com"));
  CHECK_FALSE(guard.origin_allowed("http://localhost:1@evil.com"));
}

TEST_CASE("check_request_head: one Host, at most one Origin, and chunked as the only transfer coding") {
  namespace bhttp = boost::beast::http;
  auto head = [](std::initializer_list<std::pair<bhttp::field, const char*>> fields) {
    bhttp::fields f;
    for (const auto& [name, value] : fields) f.insert(name, value);
    return check_request_head(f);
  };
  CHECK_FALSE(head({{bhttp::field::host, "localhost"}}).has_value());
  CHECK_FALSE(head({{bhttp::field::host, "localhost"}, {bhttp::field::transfer_encoding, "Chunked"}}).has_value());
  CHECK(head({})->status == 400);
  CHECK(head({{bhttp::field::host, "a"}, {bhttp::field::host, "b"}})->status == 400);
  CHECK(head({{bhttp::field::host, "a"}, {bhttp::field::origin, "http://a"}, {bhttp::field::origin, "http://b"}})
            ->status == 400);
  CHECK(head({{bhttp::field::host, "localhost:1@evil.com"}})->status == 400);
  auto both = head(
      {{bhttp::field::host, "a"}, {bhttp::field::transfer_encoding, "chunked"}, {bhttp::field::content_length, "5"}});
  REQUIRE(both);
  CHECK(both->status == 400);
  CHECK(head({{bhttp::field::host, "a"}, {bhttp::field::transfer_encoding, "xchunked"}})->status == 400);
  CHECK(head({{bhttp::field::host, "a"}, {bhttp::field::transfer_encoding, "chunked, chunked"}})->status == 400);
  auto gzip = head({{bhttp::field::host, "a"},
                    {bhttp::field::transfer_encoding, "gzip"},
                    {bhttp::field::transfer_encoding, "chunked"}});
  REQUIRE(gzip);
  CHECK(gzip->status == 501);
  CHECK(gzip->message.find("'gzip'") != std::string::npos);
}

namespace {
struct fake_member : connection_table::member {
  int preempted = 0;
  void preempt() override { ++preempted; }
};
}  // namespace

TEST_CASE("connection_table: at the cap the longest-waiting connection makes room, a working one never does") {
  connection_table table(2);
  auto a = std::make_shared<fake_member>();
  auto b = std::make_shared<fake_member>();
  auto c = std::make_shared<fake_member>();
  auto d = std::make_shared<fake_member>();
  connection_table::slot sa, sb, sc, sd;
  REQUIRE(table.join(sa, a));
  REQUIRE(table.join(sb, b));
  table.set_waiting(sb, true);
  table.set_waiting(sa, true);  // a waits, but b has waited longer
  REQUIRE(table.join(sc, c));
  CHECK(b->preempted == 1);
  CHECK(a->preempted == 0);
  CHECK(table.size() == 2);
  table.leave(sb);  // b's own leave after being preempted changes nothing
  CHECK(table.size() == 2);
  table.set_waiting(sa, false);  // a works now; so does c
  CHECK_FALSE(table.join(sd, d));
  CHECK(table.size() == 2);
  table.set_waiting(sc, true);
  CHECK(table.preempt_one());
  CHECK(c->preempted == 1);
  CHECK(table.size() == 1);
  CHECK_FALSE(table.preempt_one());
  table.leave(sa);
  table.leave(sa);
  CHECK(table.size() == 0);
  CHECK(default_max_connections(1024) == 768);
  CHECK(default_max_connections(256) == 192);
  CHECK(default_max_connections(1u << 20) == 4096);
}
