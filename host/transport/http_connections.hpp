// How many HTTP connections toolhost holds at once, and which one to let go when a new one comes
// at the cap. A connection that waits for a request (kept alive between requests, or still
// sending its headers) costs a file descriptor and nothing else; one that carries a request or a
// stream is doing work. At the cap, the connection that has waited the longest is closed to make
// room (as nginx does with idle keep-alive connections), so idle or slowloris sockets cannot lock
// out a new client; only when every connection is working is the newcomer refused.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>

namespace toolhost::transport::http {

class connection_table {
 public:
  // What the table may ask of a connection.
  class member {
   public:
    virtual ~member() = default;
    // [any thread] Close soon: the table has already given the place away.
    virtual void preempt() = 0;
  };

  // A connection's place in the table; the connection holds it and calls leave() when it closes.
  class slot {
   private:
    friend class connection_table;
    std::weak_ptr<member> member_;
    bool joined_ = false;
    bool waiting_ = false;
    std::list<slot*>::iterator position_;
  };

  explicit connection_table(size_t max_connections) : max_(max_connections) {}

  // Gives `m` a place. At the cap, the connection that has waited the longest for a request is
  // preempted to make room; false when no connection waits (the caller refuses the newcomer).
  bool join(slot& s, std::weak_ptr<member> m);
  // The connection now waits for a request (true: it may be preempted) or works on one.
  void set_waiting(slot& s, bool waiting);
  // Frees the place (again is harmless).
  void leave(slot& s);
  // Preempts the connection that has waited the longest, if any: frees a descriptor when accept
  // fails for want of one.
  bool preempt_one();

  size_t size() const;
  size_t max() const { return max_; }
  // The most connections held at once since the last call (a burst between two looks counts).
  size_t take_peak();

 private:
  // Removes the longest-waiting slot from the table (false when none waits); `victim` is its
  // member, to preempt once the lock is released. Under mutex_.
  bool take_oldest_waiting_locked(std::shared_ptr<member>& victim);

  const size_t max_;
  mutable std::mutex mutex_;
  size_t count_ = 0;
  size_t peak_ = 0;
  std::list<slot*> waiting_;  // oldest first
};

// The cap for a process allowed `fd_limit` descriptors: three quarters of them (at most 4096),
// the rest left to plugins, log files and the sockets of outgoing connections.
size_t default_max_connections(size_t fd_limit);
// RLIMIT_NOFILE's soft limit now.
size_t current_fd_limit();

}  // namespace toolhost::transport::http
