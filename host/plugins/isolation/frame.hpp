// The frames a parent toolhost and its plugin child exchange over their socket (DESIGN.md, "The
// wire"): a kind, the id of the call it belongs to, and byte-string fields.
#pragma once

#include <sys/types.h>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace toolhost::plugins::isolation {

enum class kind : uint8_t {
  // parent -> child
  start = 1,   // [settings JSON]: what to load (see child_main.cpp)
  call = 2,    // [op, name, arguments, meta, client capabilities, protocol version, progress wanted]
  cancel = 3,  // []
  answer = 4,  // [question id, status, JSON]: the reply to an `ask`
  stop = 5,    // []: run every deinit and exit
  // child -> parent
  ready = 20,     // [snapshot JSON]
  result = 21,    // [status, text]
  progress = 22,  // [progress, total, message or "", has message "1"/"0"]
  call_log = 23,  // [level, logger, data JSON]
  ask = 24,  // [question id, method, params JSON, timeout ms]; method "confirm_whole_file": params is the file's name
  list_changed = 25,      // [plugin, lists]
  resource_updated = 26,  // [uri]
  log = 27,               // [level, logger, data JSON]
};

// Frames larger than this are a fault of the peer, not a message.
inline constexpr uint32_t kMaxFrame = 64u << 20;

struct frame {
  enum kind kind = kind::stop;
  uint64_t id = 0;
  std::vector<std::string> fields;

  // Field `i`, or "" when the frame has fewer.
  std::string_view at(size_t i) const { return i < fields.size() ? std::string_view(fields[i]) : std::string_view(); }
};

// Appends the encoding of a frame to `out`.
void encode(std::string& out, enum kind k, uint64_t id, std::initializer_list<std::string_view> fields);

// One end of the socket: whole frames out (from any thread), whole frames in (one reader at a
// time: the caller serializes receive() and try_receive()).
class channel {
 public:
  explicit channel(int fd) : fd_(fd) {}
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  ~channel();

  // Sends one frame; false once the peer is gone. [any-thread]
  bool send(enum kind k, uint64_t id, std::initializer_list<std::string_view> fields);
  // Blocks for the next frame; false at end of stream or on a malformed frame (`error` says which).
  bool receive(frame& out, std::string& error);
  // The next frame if a whole one has arrived, without blocking: `got`, `none` yet, or `closed`
  // (end of stream or a malformed frame, as receive() returns false; it stays closed).
  enum class poll_result { got, none, closed };
  poll_result try_receive(frame& out, std::string& error);
  // Once receive() or try_receive() saw the end of the stream. [any-thread]
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Ends both directions: a reader blocked in receive() returns false.
  void shut();
  int fd() const { return fd_; }

 private:
  // Takes one whole frame from in_ into `out`; false when in_ holds none yet or it is malformed
  // (then `error` says why).
  bool take(frame& out, std::string& error);
  // Appends what one read() returns; `wait`: block for it. Returns >0 bytes read, 0 at end of
  // stream or on an error, -1 when nothing is there and `wait` is false.
  ssize_t read_some(bool wait);

  int fd_;
  std::mutex send_mutex_;
  std::string out_;  // guarded by send_mutex_; reused so a send allocates nothing once warm
  std::string in_;
  size_t in_pos_ = 0;
  std::atomic<bool> closed_{false};
};

}  // namespace toolhost::plugins::isolation
