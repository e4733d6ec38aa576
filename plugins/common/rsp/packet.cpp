#include <toolhost/rsp/packet.hpp>

#include <toolhost/rsp/hex.hpp>

namespace toolhost::rsp {

uint8_t checksum(std::string_view data) {
  uint8_t sum = 0;
  for (char c : data) sum = static_cast<uint8_t>(sum + static_cast<uint8_t>(c));
  return sum;
}

std::string frame(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 4);
  out += '$';
  out += payload;
  out += '#';
  const uint8_t sum = checksum(payload);
  out += to_hex(&sum, 1);
  return out;
}

std::string escape_binary(std::string_view data) {
  std::string out;
  out.reserve(data.size());
  for (char c : data) {
    if (c == '$' || c == '#' || c == '}' || c == '*') {
      out += '}';
      out += static_cast<char>(c ^ 0x20);
    } else {
      out += c;
    }
  }
  return out;
}

bool unescape(std::string_view raw, std::string& out, size_t limit) {
  out.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '}') {
      if (i + 1 >= raw.size()) return false;
      out += static_cast<char>(raw[++i] ^ 0x20);
    } else if (c == '*') {
      // "x*n" repeats the previous character n - 29 more times; n is a printable character
      // (the protocol avoids '#' and '$', which the framer has already consumed).
      if (out.empty() || i + 1 >= raw.size()) return false;
      const int n = static_cast<uint8_t>(raw[++i]) - 29;
      if (n < 3 || n > 97) return false;
      if (out.size() + static_cast<size_t>(n) > limit) return false;
      out.append(static_cast<size_t>(n), out.back());
    } else {
      out += c;
    }
    if (out.size() > limit) return false;
  }
  return true;
}

void decoder::feed(std::string_view bytes) {
  for (char c : bytes) {
    switch (state_) {
      case state::idle:
        if (c == '$') {
          state_ = state::body;
          raw_.clear();
          sum_ = 0;
          overflow_ = false;
        } else if (c == '+') {
          events_.push_back({event::kind::ack, {}});
        } else if (c == '-') {
          events_.push_back({event::kind::nack, {}});
        } else if (c == '\x03') {
          events_.push_back({event::kind::interrupt, {}});
        }
        // Anything else between packets is line noise; the protocol says to ignore it.
        break;
      case state::body:
        if (c == '#') {
          state_ = state::checksum1;
          break;
        }
        sum_ = static_cast<uint8_t>(sum_ + static_cast<uint8_t>(c));
        if (raw_.size() < max_packet_) {
          raw_ += c;
        } else {
          overflow_ = true;
        }
        break;
      case state::checksum1:
        cs_high_ = hex_digit(c);
        state_ = state::checksum2;
        break;
      case state::checksum2:
        cs_low_ = hex_digit(c);
        finish();
        state_ = state::idle;
        break;
    }
  }
}

void decoder::finish() {
  const bool sum_ok = cs_high_ >= 0 && cs_low_ >= 0 && ((cs_high_ << 4) | cs_low_) == sum_;
  event e{event::kind::bad_packet, {}};
  if (sum_ok && !overflow_ && unescape(raw_, e.payload, max_packet_)) {
    e.type = event::kind::packet;
  } else {
    e.payload.clear();
  }
  events_.push_back(std::move(e));
  raw_.clear();
}

event decoder::next() {
  event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

}  // namespace toolhost::rsp
