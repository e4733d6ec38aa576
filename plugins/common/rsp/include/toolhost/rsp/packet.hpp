// GDB remote serial protocol framing (the "$payload#cs" packets and the bytes around them).
//
// The decoder is incremental: feed it whatever the socket produced and take events out. It
// never trusts the peer: checksums are verified, escapes and run-length encoding are undone
// with bounds, and a packet longer than the configured limit is dropped as an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

namespace toolhost::rsp {

// A packet ready to send: '$' + escaped payload + '#' + two hex checksum digits.
std::string frame(std::string_view payload);

// Escapes '$', '#', '}' and '*' (binary data in X packets and qXfer replies).
std::string escape_binary(std::string_view data);

// The modulo-256 sum of `data`.
uint8_t checksum(std::string_view data);

// Undoes the escapes ('}' x ^ 0x20) and run-length encoding ('*' n) of a received payload.
// Returns false when the payload is malformed (a dangling escape, a run with nothing before
// it, a run length outside 29..126 + ' ' as the protocol defines, or an output over `limit`).
bool unescape(std::string_view raw, std::string& out, size_t limit);

// One thing read from the wire.
struct event {
  enum class kind {
    packet,      // a complete packet with a good checksum; `payload` is decoded
    bad_packet,  // a packet with a wrong checksum or malformed body (send '-')
    ack,         // '+'
    nack,        // '-'
    interrupt,   // 0x03 (only a stub receives this; a client may ignore it)
  };
  kind type;
  std::string payload;
};

class decoder {
 public:
  explicit decoder(size_t max_packet = 1 << 20) : max_packet_(max_packet) {}

  // Appends bytes from the wire; complete events become available through next().
  void feed(std::string_view bytes);
  bool has_event() const { return !events_.empty(); }
  event next();
  // True while a packet has started but not finished.
  bool in_packet() const { return state_ != state::idle; }

 private:
  enum class state { idle, body, checksum1, checksum2 };
  void finish();

  size_t max_packet_;
  state state_ = state::idle;
  std::string raw_;
  bool overflow_ = false;
  uint8_t sum_ = 0;
  int cs_high_ = 0;
  int cs_low_ = 0;
  std::deque<event> events_;
};

}  // namespace toolhost::rsp
