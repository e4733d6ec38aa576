#include "stop_reply.hpp"

#include <toolhost/rsp/hex.hpp>

namespace toolhost::gdb {

std::optional<int64_t> parse_thread_id(std::string_view text) {
  if (text == "-1") return -1;
  if (const auto dot = text.find('.'); dot != std::string_view::npos) text = text.substr(dot + 1);
  if (!text.empty() && text[0] == 'p') text = text.substr(1);
  auto v = rsp::parse_number(text);
  if (!v) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<stop_reply> parse_stop_reply(std::string_view packet, int pc_regnum) {
  if (packet.empty()) return std::nullopt;
  stop_reply r;
  const char k = packet[0];
  if (k == 'N') {
    r.type = stop_reply::kind::no_threads;
    return r;
  }
  if (k != 'S' && k != 'T' && k != 'W' && k != 'X') return std::nullopt;
  if (packet.size() < 3) return std::nullopt;
  auto sig = rsp::parse_number(packet.substr(1, 2));
  if (!sig) return std::nullopt;
  r.signal = static_cast<int>(*sig);
  if (k == 'W') r.type = stop_reply::kind::exited;
  if (k == 'X') r.type = stop_reply::kind::killed;
  if (k != 'T') return r;
  std::string_view rest = packet.substr(3);
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    std::string_view field = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = field.substr(0, colon), value = field.substr(colon + 1);
    if (key == "thread") {
      if (auto t = parse_thread_id(value)) r.thread = *t;
    } else if (key == "swbreak") {
      r.swbreak = true;
    } else if (key == "hwbreak") {
      r.hwbreak = true;
    } else if (key == "watch" || key == "rwatch" || key == "awatch") {
      r.watch = key == "watch"    ? stop_reply::watch_kind::write
                : key == "rwatch" ? stop_reply::watch_kind::read
                                  : stop_reply::watch_kind::access;
      r.watch_address = rsp::parse_number(value).value_or(0);
    } else if (auto regnum = rsp::parse_number(key); regnum && static_cast<int>(*regnum) == pc_regnum) {
      if (auto bytes = rsp::from_hex(value); bytes && bytes->size() <= 8) {
        uint64_t v = 0;
        for (size_t i = 0; i < bytes->size(); ++i) v |= static_cast<uint64_t>((*bytes)[i]) << (8 * i);
        r.pc = v;
      }
    }
  }
  return r;
}

}  // namespace toolhost::gdb
