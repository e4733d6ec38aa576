// One SSE stream of a Streamable HTTP session: the messages that belong to one POST's request,
// or the session's standalone stream (GET) for everything unrelated to a request. Every event
// gets an id "<stream>-<sequence>", so a client that lost the connection can come back with
// GET and Last-Event-ID and receive what it missed.
//
// What is kept for that is bounded: beyond `max_bytes`, the oldest events other than the
// response are dropped (progress and log messages; a client that never reads loses those, never
// the answer), so a call that reports a million steps to a client that does not read costs at
// most max_bytes.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace toolhost::transport::http {

class stream {
 public:
  struct event {
    uint64_t seq = 0;
    std::string data;  // one JSON-RPC message
  };
  // What a connection takes from the stream in one go.
  struct slice {
    std::vector<event> events;
    bool ended = false;  // nothing more will come after these
  };

  stream(int index, size_t max_bytes);

  int index() const { return index_; }
  std::string event_id(uint64_t seq) const { return std::to_string(index_) + "-" + std::to_string(seq); }

  // [any thread] Adds a message; `last` ends the stream (the response to a POST's request).
  void push(std::string json, bool last);
  // [any thread] Drops every kept event: nobody can resume the stream any more.
  void forget();
  // Bytes of JSON kept for replay, and how many events were dropped to stay within max_bytes.
  size_t bytes() const;
  uint64_t dropped() const;
  // [any thread] Ends the stream without another message (a cancelled request, a closed session).
  void end();
  bool ended() const;

  // Events after sequence number `after`, oldest first.
  slice take(uint64_t after) const;

  // The connection that carries the stream now: `wake` runs (on any thread) whenever there is
  // something new. A later attach replaces an earlier one; returns the attachment's number.
  uint64_t attach(std::function<void()> wake);
  // Drops attachment `generation` if it is still the current one.
  void detach(uint64_t generation);
  bool is_current(uint64_t generation) const;

  // The newest sequence number some connection has written out; a GET without Last-Event-ID
  // starts after it.
  void mark_delivered(uint64_t seq);
  uint64_t delivered() const;
  // The stream ended and a connection wrote out its last event.
  bool delivered_to_end() const;
  // A connection carries it now.
  bool attached() const;

  // The JSON text of the request whose answer this stream carries (POST streams).
  void set_request(std::string id_json);
  std::string request() const;

  // The HTTP status a 2026-07-28 error answer asks for (0: 200), when it is the only message.
  void set_status(int status);
  int status() const;

 private:
  const int index_;
  const size_t max_bytes_;
  mutable std::mutex mutex_;
  std::deque<event> events_;
  size_t bytes_ = 0;
  uint64_t dropped_ = 0;
  std::string request_;
  int status_ = 0;
  uint64_t next_seq_ = 1;
  bool ended_ = false;
  std::function<void()> wake_;
  uint64_t generation_ = 0;
  uint64_t delivered_ = 0;
};

}  // namespace toolhost::transport::http
