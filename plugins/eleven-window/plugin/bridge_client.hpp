// The plugin's side of the Eleven bridge: one JSON line per call over a Unix socket.
//
//   {"id":1,"tool":"rename_function","args":{...},"from":{"agent":"Claude","chat":"c_123"}}
//   {"id":1,"ok":true,"text":"..."}   or   {"id":1,"ok":false,"error":"..."}
//
// One connection is kept and reused; calls on it are serialised. Any trouble on the wire (the
// window gone, a reply that is late, too long, not JSON, or for another id) fails that call
// with one sentence and drops the connection, so the next call starts on a fresh one: that is
// how a restarted window is picked up.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <absl/status/statusor.h>

namespace toolhost::eleven {

struct bridge_options {
  std::string socket_path;  // ELEVEN_BRIDGE; empty means no bridge is configured
  std::string agent;        // ELEVEN_AGENT
  std::string chat;         // ELEVEN_CHAT
  std::chrono::milliseconds timeout{10000};
  size_t max_reply_bytes = 16u << 20;
};

// What the window answered: ok with its text, or its error text.
struct bridge_reply {
  bool ok = false;
  std::string text;  // "text" when ok, "error" otherwise
};

class bridge_client {
 public:
  explicit bridge_client(bridge_options options);
  ~bridge_client();
  bridge_client(const bridge_client&) = delete;
  bridge_client& operator=(const bridge_client&) = delete;

  // Sends one call and waits for its reply, at most `timeout`, polling `cancelled` so a
  // cancelled call returns promptly. `args_json` is a JSON object. A non-OK status means the
  // call never got a usable answer; its message is one sentence for the agent.
  absl::StatusOr<bridge_reply> call(std::string_view tool, std::string_view args_json,
                                    const std::function<bool()>& cancelled = {});

  const bridge_options& options() const noexcept { return options_; }

 private:
  absl::Status ensure_connected(std::string_view tool, std::chrono::steady_clock::time_point deadline);
  void disconnect();

  bridge_options options_;
  std::mutex mutex_;  // one call on the connection at a time
  int fd_ = -1;
  uint64_t next_id_ = 1;
};

// Reads ELEVEN_BRIDGE, ELEVEN_AGENT and ELEVEN_CHAT from the environment.
bridge_options bridge_options_from_environment();

}  // namespace toolhost::eleven
