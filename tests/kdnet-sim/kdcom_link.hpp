// The debugger's end of a KDCOM byte stream to another KD target (kd-sim --winguest DIR, or
// kd-sim --qemu-gdb SOCK for a live guest), so that kdnet-sim can carry that target's KD packets
// over KDNET instead of serving its own tiny machine: one KD target implementation, two wires.
//
// KDCOM's packet layer stays on this link (its ids with the SYNC bit, its ACKs, RESEND, the 0xAA
// trailer); KDNET's (its own ids, ACKs and retransmission over lossy datagrams) stays in the
// simulator. Only the data packets' type and payload cross between the two, as Windows' kdnet
// carries the kernel's KdSendPacket payloads, and the control packets that make a halted kernel
// report again (RESET, RESEND) are passed on. The stream is a local socket that loses nothing,
// so every data packet from the target is ACKed at once and handed over.
//
// Not thread-safe: the simulator's thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace kdnet_sim {

class kdcom_link {
 public:
  struct packet {
    uint16_t type = 0;
    std::vector<uint8_t> payload;
    bool sync = false;  // the target restarted its stream (a reboot or a RESET)
  };

  ~kdcom_link();
  // Connects to `unix:PATH` (or a bare PATH); false with `error` set when it cannot.
  bool connect(const std::string& spec, std::string* error);
  int fd() const { return fd_; }
  bool connected() const { return fd_ >= 0; }

  // Queues a data packet for the target; sent when the one before it is acknowledged.
  void send(uint16_t type, std::vector<uint8_t> payload);
  // A control packet (RESET, RESEND) at once. A RESET also restarts this side's packet ids.
  void send_control(uint16_t type);
  void break_in();

  // Reads what the target sent (non-blocking) and retransmits what it has not acknowledged.
  // Returns the data packets received, each taken once and already acknowledged.
  std::vector<packet> pump();

 private:
  void write_bytes(const std::vector<uint8_t>& bytes);
  void transmit_front();
  void restart_ids();

  int fd_ = -1;
  std::vector<uint8_t> in_;
  std::deque<std::pair<uint16_t, std::vector<uint8_t>>> out_;
  bool waiting_ack_ = false;
  std::chrono::steady_clock::time_point sent_at_{};
  uint32_t next_id_ = 0;                // ours, toggling bit 0
  std::optional<uint32_t> last_taken_;  // the target's last data packet id, SYNC masked
};

}  // namespace kdnet_sim
