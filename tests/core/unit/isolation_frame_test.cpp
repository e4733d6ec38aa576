// The frames between a parent toolhost and its plugin child: what one side sends the other reads
// back exactly, and bytes that are not a frame (a plugin in the child may write anything to its
// socket) end the stream with a reason instead of a bad read.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "host/plugins/isolation/frame.hpp"

using namespace toolhost::plugins::isolation;

namespace {

struct pair_of_channels {
  int fds[2];
  pair_of_channels() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0); }
};

}  // namespace

TEST_CASE("frames cross with their kind, id and fields intact", "[isolation]") {
  pair_of_channels p;
  channel a(p.fds[0]), b(p.fds[1]);
  const std::string big(60000, 'x');  // within one socket buffer: nobody reads while it is sent
  const std::string binary("a\0b\n\xff", 5);
  REQUIRE(a.send(kind::call, 0x123456789abcULL, {"tool", "", binary, big}));
  REQUIRE(a.send(kind::cancel, 7, {}));
  frame f;
  std::string error;
  REQUIRE(b.receive(f, error));
  CHECK(f.kind == kind::call);
  CHECK(f.id == 0x123456789abcULL);
  REQUIRE(f.fields.size() == 4);
  CHECK(f.fields[0] == "tool");
  CHECK(f.fields[1].empty());
  CHECK(f.fields[2] == binary);
  CHECK(f.fields[3] == big);
  CHECK(f.at(9).empty());
  REQUIRE(b.receive(f, error));
  CHECK(f.kind == kind::cancel);
  CHECK(f.id == 7);
  CHECK(f.fields.empty());
}

TEST_CASE("bytes that are not frames end the stream with a reason", "[isolation]") {
  auto fed = [](const std::string& bytes) {
    pair_of_channels p;
    REQUIRE(::write(p.fds[0], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    ::close(p.fds[0]);
    channel b(p.fds[1]);
    frame f;
    std::string error;
    CHECK_FALSE(b.receive(f, error));
    return error;
  };
  CHECK(fed("garbage on fd 3 from a plugin\n") == "a frame of 1651663207 bytes");
  CHECK(fed(std::string("\xff\xff\xff\xff", 4)) == "a frame of 4294967295 bytes");
  // A field longer than its frame.
  std::string frame_bytes;
  encode(frame_bytes, kind::result, 1, {"0", "text"});
  frame_bytes[4 + 13] = 100;  // the first field's length
  CHECK(fed(frame_bytes) == "a field that runs past its frame");
  // A stream that ends inside a frame is an end, not an error.
  frame_bytes.clear();
  encode(frame_bytes, kind::result, 1, {"0", "text"});
  CHECK(fed(frame_bytes.substr(0, frame_bytes.size() - 2)).empty());
}
