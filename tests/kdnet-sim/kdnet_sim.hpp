// A KDNET target simulator on loopback, written from the recorded protocol (ReactOS windbgkd.h
// layouts; the KDNET datagram, key and handshake rules in ntoseye's notes) and deliberately
// sharing no code with the kdnet backend, so that it can catch the backend's mistakes.
//
// It plays a two-processor AMD64 Windows kernel under KDNET: it pokes the host on the control
// channel, keys the data channel from the host's reply, sends keepalives, and serves KD over the
// data channel: manipulate APIs on a memory image with real 4-level page tables, a CONTEXT and
// KSPECIAL_REGISTERS per processor, a 32-entry breakpoint table, execute breakpoints in DR0-DR3
// (no data watchpoints: the tiny instruction set never writes memory), Continue2 with the trace
// flag, SwitchProcessor, break-in, DbgPrint while running, and a reboot on request. As Windows
// does, a break-in (and the initial break) enters DbgBreakPointWithStatus and is reported with
// rip at its int3, which the debugger must step over; a halted target sends its state change
// until it is acknowledged and again on RESET or RESEND. It can drop and corrupt datagrams both
// ways.
//
// With options.kd_target it serves no machine of its own: the KD packets it carries are those of
// a KDCOM target (kd-sim serving the Windows-shaped guest's snapshot, or a live guest), reached
// through kdcom_link; its KDNET transport is the same either way.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kdnet_sim {

// Where the machine is when the simulator starts.
enum class start_state {
  running,        // CPU 0 runs its loop and prints
  initial_break,  // halted at the int3 of DbgBreakPointWithStatus (a kernel booted with /break)
  breakpoint,     // halted at a table breakpoint on kIncRax that a vanished debugger left
};

struct options {
  std::string host = "127.0.0.1";  // where the debugger listens
  uint16_t port = 50000;
  std::string key = "1.2.3.4";
  double drop = 0.0;     // probability of losing a datagram, each direction
  double corrupt = 0.0;  // probability of flipping one bit of a datagram, each direction
  uint32_t seed = 1;
  uint32_t poke_interval_ms = 3000;
  uint32_t dbgprint_interval_ms = 200;  // while running
  uint32_t retransmit_ms = 150;         // an unacknowledged KD packet is sent again after this
  start_state start = start_state::running;
  // Empty: the built-in machine above. Otherwise `unix:PATH` of a KDCOM target (kd-sim) whose KD
  // packets this simulator carries over KDNET instead (see kdcom_link.hpp); `start` is then the
  // target's business.
  std::string kd_target;
};

struct counters {
  uint64_t datagrams_in = 0;
  uint64_t datagrams_out = 0;
  uint64_t dropped = 0;
  uint64_t corrupted = 0;
  uint64_t rejected = 0;            // failed our authentication check
  uint64_t repeated_sequences = 0;  // host datagrams dropped for reusing a sequence number
  uint64_t pokes = 0;
  uint64_t handshakes = 0;
  uint64_t retransmits = 0;
  uint64_t duplicate_requests = 0;  // a host packet id seen twice (our ACK was lost)
  uint64_t boots = 0;
  uint64_t breakpoint_hits = 0;
  uint64_t dbgprints = 0;
  uint64_t injected = 0;            // requests dropped for an injected state change
  uint64_t relayed_requests = 0;    // host data packets passed to the KDCOM target (kd_target)
  uint64_t relayed_replies = 0;     // the target's data packets carried back over KDNET
  uint64_t transport_restarts = 0;  // the KDCOM target rebooted: keys and KDNET ids start over
};

// The simulator's own datagram sealing, exposed so that tests can check it against traffic
// captured from real Windows targets. `data_key` empty: the control channel (sealed with the
// control key); otherwise the 32-byte data key. Sealed as the target does (direction bit clear).
std::vector<uint8_t> seal_as_target(const std::string& key, const std::vector<uint8_t>& data_key, uint8_t channel,
                                    uint64_t sequence, const std::vector<uint8_t>& payload);
// Opens a datagram with the simulator's code; empty when it does not authenticate.
std::vector<uint8_t> open_with(const std::string& key, const std::vector<uint8_t>& data_key,
                               const std::vector<uint8_t>& datagram);

class simulator {
 public:
  explicit simulator(options o);
  ~simulator();
  simulator(const simulator&) = delete;
  simulator& operator=(const simulator&) = delete;

  // Starts the target thread; false with `error` set when the socket cannot be made.
  bool start(std::string* error);
  void stop();

  // The machine reboots: keys, packet ids, breakpoints and memory start over, and it pokes again.
  void reboot();
  void set_faults(double drop, double corrupt);
  // At the next request while halted, drop it and report a state change instead: the same one
  // again (`same`), or `processor` entering DbgBreakPointWithStatus (a new stop).
  void inject(bool same, int processor = 0);

  counters stats() const;
  bool keyed() const;
  bool halted() const;
  size_t breakpoints_in_table() const;
  uint64_t rax() const;  // CPU 0's
  uint64_t rip(int processor) const;
  std::vector<uint8_t> read_physical(uint64_t address, size_t size) const;

  // The layout tests rely on.
  static constexpr uint64_t kKernelBase = 0xfffff80000000000ull;
  static constexpr uint64_t kKernelPhysical = 0x400000;
  static constexpr uint64_t kCodeStart = kKernelBase + 0x1000;  // nop; inc rax; nop; jmp -7
  static constexpr uint64_t kIncRax = kCodeStart + 1;
  static constexpr uint64_t kIdleLoop = kKernelBase + 0x1500;         // CPU 1: pause; jmp back
  static constexpr uint64_t kBreakWithStatus = kKernelBase + 0x1300;  // DbgBreakPointWithStatus: int3; ret
  static constexpr uint64_t kDataArea = kKernelBase + 0x3000;         // 64 bytes of a known pattern
  static constexpr uint64_t kCr3 = 0x1000;

 private:
  struct state;
  void run();
  std::unique_ptr<state> s_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
};

}  // namespace kdnet_sim
