// Decoding of the stub's stop replies (S, T, W, X, N) and console output (O).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace toolhost::gdb {

struct stop_reply {
  enum class kind { signal, exited, killed, no_threads };
  kind type = kind::signal;
  int signal = 0;       // S/T signal, X signal, W exit status
  int64_t thread = -1;  // from "thread:" (the tid part of p<pid>.<tid>)
  bool swbreak = false;
  bool hwbreak = false;
  enum class watch_kind { none, write, read, access };
  watch_kind watch = watch_kind::none;
  uint64_t watch_address = 0;
  std::optional<uint64_t> pc;  // when the reply carries the pc register inline
};

// Parses a stop reply; nullopt when `packet` is not one. `pc_regnum` names the register whose
// inline value (T..NN:value;) is the pc, or -1.
std::optional<stop_reply> parse_stop_reply(std::string_view packet, int pc_regnum = -1);

// A thread id as the protocol writes it ("1a2b", "p1a2b.1a2b", "-1") as a number.
std::optional<int64_t> parse_thread_id(std::string_view text);

}  // namespace toolhost::gdb
