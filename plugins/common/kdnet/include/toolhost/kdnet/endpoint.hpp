// The host side of a KDNET link: a UDP socket that waits for the target's poke, answers the
// handshake, leaves keepalives unanswered, notices a rebooted target and renegotiates, and
// carries one KD packet per data datagram with a fresh sequence number on every send (so a KD
// retransmission is never dropped by the target as a repeat).
//
// Threading: `receive` from one thread at a time; `send`, `send_breakin`, `stats`,
// `generation` and `close` from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>
#include <sys/socket.h>

#include "toolhost/kdnet/datagram.hpp"
#include "toolhost/kdnet/handshake.hpp"
#include "toolhost/kdnet/key.hpp"

namespace toolhost::kdnet {

inline constexpr std::string_view kDefaultListen = "0.0.0.0:50000";

struct endpoint_stats {
  uint64_t datagrams_received = 0;
  uint64_t datagrams_sent = 0;
  uint64_t rejected_unauthenticated = 0;  // tag mismatch: corrupted or foreign
  uint64_t rejected_malformed = 0;        // not KDNET, or data before the handshake
  uint64_t handshakes = 0;
  uint64_t keepalives = 0;
  uint64_t reboots = 0;
  uint64_t solicitations = 0;  // empty control datagrams sent to ask for a poke
};

// What `receive` hands up.
struct link_event {
  enum class kind { packet, rebooted };
  kind what = kind::packet;
  std::vector<uint8_t> bytes;  // one KD packet (header + payload, no KDCOM trailer)
};

class endpoint {
 public:
  // `listen` is "HOST:PORT" or "PORT" (HOST defaults to 0.0.0.0); the socket is bound at once.
  static absl::StatusOr<std::unique_ptr<endpoint>> listen(std::string_view listen, const control_key& key);
  ~endpoint();
  endpoint(const endpoint&) = delete;
  endpoint& operator=(const endpoint&) = delete;

  uint16_t local_port() const { return local_port_; }
  std::string local_address() const;

  // Waits until a target has poked and the data key is agreed.
  absl::Status wait_keyed(std::chrono::milliseconds timeout);
  bool keyed() const;

  // Sends one KD packet on the data channel. Before the handshake it sends an empty control
  // datagram to a known target (to solicit a poke) and fails with FailedPrecondition. Data from
  // a target keyed by an earlier session solicits a poke the same way.
  absl::Status send(std::span<const uint8_t> kd_packet);
  // The KD break-in byte; held back until the target is keyed.
  absl::Status send_breakin();

  // Waits up to `timeout` for the next KD packet or reboot; std::nullopt on timeout. Control
  // traffic is handled here and never surfaces.
  absl::StatusOr<std::optional<link_event>> receive(std::chrono::milliseconds timeout);

  // Bumped by every (re)negotiation after the first: a changed value means a new target boot.
  uint64_t generation() const { return generation_.load(); }
  endpoint_stats stats() const;

  // Makes a blocked `receive` return Cancelled soon after.
  void close();

 private:
  endpoint(int fd, const control_key& key);
  absl::Status send_datagram_locked(const datagram& d);
  // One datagram off the socket, dispatched; false when the wait ran out.
  absl::StatusOr<bool> pump_one(std::chrono::milliseconds wait);
  void handle_control(const datagram& d, const sockaddr_storage& from, socklen_t from_size);
  void solicit_locked(uint8_t version, const sockaddr_storage& to, socklen_t to_size);

  int fd_ = -1;
  uint16_t local_port_ = 0;
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> generation_{0};

  mutable std::mutex mutex_;  // everything below
  key_set keys_;
  uint8_t version_ = 0;  // the target's protocol number, echoed back
  bool have_peer_ = false;
  sockaddr_storage peer_{};
  socklen_t peer_size_ = 0;
  uint64_t next_sequence_ = 1;
  bool data_since_keyed_ = false;
  bool breakin_pending_ = false;
  std::chrono::steady_clock::time_point last_solicit_{};
  endpoint_stats stats_;
  std::deque<link_event> pending_;
};

}  // namespace toolhost::kdnet
