// The seam between the KD state machine and a wire. KDCOM (serial / socket byte stream) and
// KDNET (encrypted UDP) each implement `link`; everything above it (manipulate APIs, state
// changes, the pump, breakpoints) is shared in toolhost::kd::target.
//
// Threading: `send` and `receive` are called from one thread at a time (the foreground while
// the target is halted, the pump while it runs). `break_in` and `shutdown` may be called from
// any thread at any time.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace toolhost::kd {

// One KD data packet, without the framing of any particular link.
struct packet {
  uint16_t type = 0;
  std::vector<uint8_t> payload;
};

// A data packet the link accepted (acknowledged, not a duplicate).
struct inbound {
  packet pkt;
  // The target restarted its packet stream without being asked (KDCOM: an id with the SYNC
  // bit that no RESET of ours explains; KDNET: a fresh handshake). After a reboot the target
  // has forgotten every breakpoint and its state must be rediscovered.
  bool target_restarted = false;
};

// Counters a link keeps for tests and diagnostics.
struct link_stats {
  uint64_t sent = 0;         // data packets handed to send()
  uint64_t retransmits = 0;  // extra transmissions (timeouts and RESENDs)
  uint64_t received = 0;     // data packets accepted
  uint64_t duplicates = 0;   // data packets acknowledged and dropped as stale
  uint64_t bad_packets = 0;  // frames that failed their checksum or trailer
  uint64_t resets = 0;       // RESET exchanges
  // RESENDs the target sent: a packet of ours it could not take, or one that came while it
  // waited for our ACK of its own, which it then counts as delivered (kddll) and never repeats.
  uint64_t resend_requests = 0;
};

class link {
 public:
  virtual ~link() = default;

  // Sends one data packet and returns once the peer acknowledged it. Data packets that
  // arrive meanwhile are acknowledged and queued for receive(). Fails after the link's
  // retries with DeadlineExceeded, or Unavailable when the connection is gone.
  virtual absl::Status send(uint16_t type, std::span<const uint8_t> payload) = 0;

  // The next accepted data packet, waiting up to `timeout`. DeadlineExceeded when none came.
  virtual absl::StatusOr<inbound> receive(std::chrono::milliseconds timeout) = 0;

  // Asks a running target to break in. [any-thread]
  virtual absl::Status break_in() = 0;

  // Resynchronizes packet ids with the target (KDCOM: a RESET exchange). A halted target
  // answers by sending its current state change again.
  virtual absl::Status reset() = 0;

  // Wakes any blocked send/receive with Unavailable and closes the connection. [any-thread]
  virtual void shutdown() = 0;

  virtual link_stats stats() const = 0;

  // "kdcom unix:/tmp/ntoseye-kd.sock", for messages.
  virtual std::string describe() const = 0;
};

}  // namespace toolhost::kd
