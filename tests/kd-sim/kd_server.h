// The simulated target's side of KD: KDCOM framing and packet ids as kddll does them, the
// manipulate dispatcher of kdapi, state-change reports, DbgPrint, and fault injection on
// everything it sends (drop, corrupt, delay, reorder). Single-threaded: one poll loop serves
// the KD connection, the control channel and the running CPUs.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <memory>

#include "breakpoint_table.h"
#include "machine.h"

namespace kdsim {

struct faults {
  double drop = 0;     // probability a frame we send is lost
  double corrupt = 0;  // probability one bit of a frame we send flips
  double delay = 0;    // probability a frame is held back `delay_ms`
  int delay_ms = 0;
  double reorder = 0;  // probability a frame is sent after the next one
};

// Where the machine is when the simulator starts.
enum class start_state {
  running,        // running, printing "Hello from kd-sim" through DbgPrint
  initial_break,  // halted at its initial break (the int3 of DbgBreakPointWithStatus), as a
                  // kernel booted with /debug and /break waits for a debugger
  breakpoint,     // halted at a breakpoint a debugger that went away left in the table
};

struct options {
  std::string listen = "unix:/tmp/ntoseye-kd.sock";  // or tcp:PORT, or pty (prints the device)
  std::string control;                               // unix socket for test commands; empty: none
  faults wire;
  uint32_t seed = 1;
  int cpus = 2;
  start_state start = start_state::running;
  int ack_timeout_ms = 200;
  bool verbose = false;
  // Faults of the target itself, for the debugger's error messages: a kernel that never polls
  // for the break-in byte (interrupts off), and one that answers every packet with RESET.
  bool no_break_in = false;
  bool reset_storm = false;
};

// The target side of KD (what Windows' kdcom and kd code do) for a kernel running on `machine`
// (a sim_machine or the live qemu_machine).
class kd_server {
 public:
  kd_server(options o, std::unique_ptr<machine> m);
  int run();  // until "quit" on the control channel or a signal

 private:
  struct frame {
    enum class kind { data, bad_data, control, break_in } what;
    uint16_t type = 0;
    uint32_t id = 0;
    std::vector<uint8_t> payload;
  };
  enum class send_result { acked, reset, lost };

  // I/O.
  void service(int timeout_ms);
  std::optional<frame> parse();
  void write_frame(std::vector<uint8_t> bytes, bool data);
  void send_control(uint16_t type, uint32_t id);
  send_result send_data(uint16_t type, const std::vector<uint8_t>& payload);
  void handle_idle_frame(frame& f);
  void accept_connection();
  void drop_connection();
  void handle_control_line(int fd, const std::string& line);

  // Target behaviour.
  void reset_ids();
  void handle_manipulate(const std::vector<uint8_t>& payload);
  void report_exception(int cpu, uint32_t code);
  // A processor enters the debugger through DbgBreakPointWithStatus (break-in, initial break).
  void break_with_status(int cpu, uint64_t status);
  // A pending `inject`: the next manipulate request is dropped and a state change is reported
  // instead, as a target whose receive loop restarted (KdpSendWaitContinue) does.
  bool apply_injection();
  void report_load_symbols(const std::string& path, uint64_t base, uint32_t size);
  void send_report();
  void send_print(const std::string& text);
  void run_slice();
  void report_event(const cpu_event& e);
  void reboot();
  void bugcheck();
  void log(const std::string& text) const;

  options options_;
  std::unique_ptr<machine> machine_;
  breakpoint_table breakpoints_;
  std::mt19937 rng_;
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  int pty_slave_fd_ = -1;  // --listen pty
  int control_listen_fd_ = -1;
  std::vector<int> control_fds_;
  std::vector<std::string> control_buffers_;
  std::vector<uint8_t> inbuf_;
  std::chrono::steady_clock::time_point last_rx_{};
  std::optional<std::vector<uint8_t>> held_;
  std::chrono::steady_clock::time_point held_at_{};

  uint32_t current_id_ = 0;
  uint32_t remote_id_ = 0;
  bool running_ = true;
  bool tracing_ = false;
  bool break_pending_ = false;
  enum class injection { none, same, processor } inject_ = injection::none;
  int inject_cpu_ = 0;
  bool report_pending_ = false;
  bool bugchecked_ = false;
  bool quit_ = false;
  bool reboot_requested_ = false;
  int current_cpu_ = 0;
  std::vector<uint8_t> last_report_;
  std::deque<std::string> prints_;
  std::deque<std::string> loads_;                      // driver loads to report while running
  uint64_t next_driver_base_ = 0xFFFFF80001000000ull;  // the built-in kernel's base + 16 MiB
  uint64_t tsc_ = 1000;

  struct counters {
    uint64_t frames = 0, dropped = 0, corrupted = 0, delayed = 0, reordered = 0;
    uint64_t retransmits = 0, resend_requests = 0, bad_frames = 0, duplicates = 0, requests = 0, reboots = 0;
    uint64_t state_changes = 0, injected = 0;
    uint64_t prints_superseded = 0;  // DbgPrints taken as ACKed because a data packet came instead
  } stats_;
  // Manipulate requests per ApiNumber since start or the last `requests reset`: a test counts
  // the round trips one debugger command costs (each is milliseconds on a real serial link).
  std::map<uint32_t, uint64_t> requests_by_api_;

  // The kernel's own record of what GetVersion answers (with an image: KPCR.KdVersionBlock).
  DBGKD_GET_VERSION64 version_block() const;
  uint64_t current_thread(int cpu) const;  // KPRCB.CurrentThread (an image) or the built-in's
  uint32_t kernel_image_size() const;
};

}  // namespace kdsim
