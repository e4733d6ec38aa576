// KDCOM framing: what the decoder makes of good, corrupted, truncated and noisy byte streams.
#include <catch2/catch.hpp>

#include <toolhost/kd/kdcom_frame.h>
#include <toolhost/kd/protocol.h>

using namespace toolhost::kd;

namespace {
std::vector<kdcom_frame> decode_all(const std::vector<uint8_t>& bytes) {
  kdcom_decoder d;
  d.feed(bytes);
  std::vector<kdcom_frame> out;
  while (auto f = d.next()) out.push_back(std::move(*f));
  return out;
}
}  // namespace

TEST_CASE("a data frame has leader, header, payload and trailer with a byte-sum checksum") {
  const std::vector<uint8_t> payload = {1, 2, 3, 250};
  const auto bytes = encode_data_frame(kTypeStateManipulate, 0x80800001, payload);
  REQUIRE(bytes.size() == 16 + 4 + 1);
  CHECK(bytes[0] == 0x30);
  CHECK(bytes[3] == 0x30);
  CHECK(bytes[4] == 2);     // type
  CHECK(bytes[6] == 4);     // byte count
  CHECK(bytes[8] == 0x01);  // id, little-endian
  CHECK(bytes[11] == 0x80);
  CHECK(bytes[12] == 0x00);  // checksum 256 = 0x100
  CHECK(bytes[13] == 0x01);
  CHECK(bytes.back() == 0xAA);
  auto frames = decode_all(bytes);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].what == kdcom_frame::kind::data);
  CHECK(frames[0].id == 0x80800001u);
  CHECK(frames[0].payload == payload);
}

TEST_CASE("control frames carry no payload and decode as control") {
  const auto bytes = encode_control_frame(kTypeAcknowledge, 0x80800000);
  REQUIRE(bytes.size() == 16);
  CHECK(bytes[0] == 0x69);
  auto frames = decode_all(bytes);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].what == kdcom_frame::kind::control);
  CHECK(frames[0].type == kTypeAcknowledge);
}

TEST_CASE("a flipped payload bit or a bad trailer is reported as bad data, and the stream resynchronizes") {
  auto bad = encode_data_frame(kTypeDebugIo, 0x80800000, std::vector<uint8_t>{9, 9, 9});
  bad[17] ^= 0x10;
  auto good = encode_data_frame(kTypeDebugIo, 0x80800001, std::vector<uint8_t>{7});
  std::vector<uint8_t> stream = bad;
  stream.insert(stream.end(), good.begin(), good.end());
  auto frames = decode_all(stream);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].what == kdcom_frame::kind::bad_data);
  CHECK(frames[1].what == kdcom_frame::kind::data);
  CHECK(frames[1].id == 0x80800001u);

  auto no_trailer = encode_data_frame(kTypeDebugIo, 1, std::vector<uint8_t>{1});
  no_trailer.back() = 0x00;
  auto f = decode_all(no_trailer);
  REQUIRE(!f.empty());
  CHECK(f[0].what == kdcom_frame::kind::bad_data);
}

TEST_CASE("noise, a partial leader and the break-in byte between frames") {
  std::vector<uint8_t> stream = {0x00, 0x30, 0x30, 0x11, 0x62, 0x69, 0x69};
  auto ack = encode_control_frame(kTypeReset, 0);
  stream.insert(stream.end(), ack.begin(), ack.end());
  auto frames = decode_all(stream);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].what == kdcom_frame::kind::break_in);
  CHECK(frames[1].what == kdcom_frame::kind::control);
  CHECK(frames[1].type == kTypeReset);
}

TEST_CASE("lengths over the maximum and unknown types are not trusted") {
  auto big = encode_data_frame(kTypeStateManipulate, 0, std::vector<uint8_t>(10, 1));
  big[6] = 0xFF;  // byte count 0x0FFF > 4000? 0x0F00 + 0xFF
  big[7] = 0x0F;
  auto frames = decode_all(big);
  for (const auto& f : frames) CHECK(f.what != kdcom_frame::kind::data);

  auto unknown = encode_data_frame(99, 0, std::vector<uint8_t>{1});
  CHECK(decode_all(unknown).empty());
}

TEST_CASE("a frame split across reads decodes once complete; a stalled partial frame can be dropped") {
  auto bytes = encode_data_frame(kTypeStateChange64, 5, std::vector<uint8_t>(100, 0x42));
  kdcom_decoder d;
  d.feed(std::span<const uint8_t>(bytes.data(), 50));
  CHECK(!d.next());
  CHECK(d.has_partial());
  d.feed(std::span<const uint8_t>(bytes.data() + 50, bytes.size() - 50));
  auto f = d.next();
  REQUIRE(f);
  CHECK(f->payload.size() == 100);

  kdcom_decoder stalled;
  stalled.feed(std::span<const uint8_t>(bytes.data(), 30));
  CHECK(!stalled.next());
  while (stalled.has_partial()) stalled.drop_partial();
  auto ack = encode_control_frame(kTypeAcknowledge, 5);
  stalled.feed(ack);
  auto g = stalled.next();
  REQUIRE(g);
  CHECK(g->what == kdcom_frame::kind::control);
}
