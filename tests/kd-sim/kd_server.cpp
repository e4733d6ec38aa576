#include "kd_server.h"

#include "sim_machine.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>
#include <utility>

namespace kdsim {
namespace {

// The manipulate API's name without the DbgKd prefix and Api suffix, as the control channel's
// `requests` prints it; nullptr for a number kdapi does not define here.
const char* manipulate_api_name(uint32_t api) {
  switch (api) {
    case DbgKdReadVirtualMemoryApi: return "ReadVirtualMemory";
    case DbgKdWriteVirtualMemoryApi: return "WriteVirtualMemory";
    case DbgKdGetContextApi: return "GetContext";
    case DbgKdWriteBreakPointApi: return "WriteBreakPoint";
    case DbgKdRestoreBreakPointApi: return "RestoreBreakPoint";
    case DbgKdReadControlSpaceApi: return "ReadControlSpace";
    case DbgKdWriteControlSpaceApi: return "WriteControlSpace";
    case DbgKdRebootApi: return "Reboot";
    case DbgKdContinueApi2: return "Continue2";
    case DbgKdReadPhysicalMemoryApi: return "ReadPhysicalMemory";
    case DbgKdWritePhysicalMemoryApi: return "WritePhysicalMemory";
    case DbgKdGetVersionApi: return "GetVersion";
    case DbgKdCauseBugCheckApi: return "CauseBugCheck";
    case DbgKdSwitchProcessor: return "SwitchProcessor";
    case DbgKdReadMachineSpecificRegister: return "ReadMachineSpecificRegister";
    case DbgKdWriteMachineSpecificRegister: return "WriteMachineSpecificRegister";
    case DbgKdSetContextExApi: return "SetContextEx";
    default: return nullptr;
  }
}

using steady = std::chrono::steady_clock;

uint32_t byte_sum(const uint8_t* p, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i < n; ++i) s += p[i];
  return s;
}

int listen_on(const std::string& spec) {
  if (spec.rfind("tcp:", 0) == 0) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(spec.substr(4))));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 4) != 0) return -1;
    return fd;
  }
  const std::string path = spec.rfind("unix:", 0) == 0 ? spec.substr(5) : spec;
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path)) return -1;
  std::strcpy(a.sun_path, path.c_str());
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 4) != 0) return -1;
  return fd;
}

std::string hex_bytes(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", p[i]);
    s += b;
  }
  return s;
}

constexpr uint64_t kDr6Idle = 0xFFFF0FF0;    // DR6 with no condition flagged
constexpr uint64_t kDr6SingleStep = 0x4000;  // BS

template <typename T>
std::vector<uint8_t> bytes_of(const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  return std::vector<uint8_t>(p, p + sizeof(T));
}

}  // namespace

kd_server::kd_server(options o, std::unique_ptr<machine> m)
    : options_(std::move(o)), machine_(std::move(m)), rng_(options_.seed) {
  if (machine_->guest_kernel()) {
    // KdVersionBlock.DebuggerDataList -> KDDEBUGGER_DATA64, whose BreakpointWithStatus is the
    // int3 a break-in or a bugcheck stops at.
    const uint64_t list = version_block().DebuggerDataList;
    uint64_t kdbg = 0, target = 0;
    machine_->read_virtual(0, list, reinterpret_cast<uint8_t*>(&kdbg), 8);
    machine_->read_virtual(0, kdbg + 0x20, reinterpret_cast<uint8_t*>(&target), 8);
    machine_->set_break_with_status(target);
  }
  reset_ids();
  switch (options_.start) {
    case start_state::running: machine_->resume(false, 0); break;
    case start_state::initial_break: break_with_status(0, DBG_STATUS_CONTROL_C); break;
    case start_state::breakpoint: {
      // A debugger set a breakpoint on the DbgPrint caller and went away; the loop reaches it
      // within a few turns (bounded here so a broken machine cannot hang the start).
      breakpoints_.add(*machine_, 0, kSayHello);
      const auto give_up = steady::now() + std::chrono::seconds(5);
      while (running_ && steady::now() < give_up) {
        run_slice();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      break;
    }
  }
}

void kd_server::log(const std::string& text) const {
  if (options_.verbose) std::fprintf(stderr, "kd-sim: %s\n", text.c_str());
}

void kd_server::reset_ids() {
  current_id_ = INITIAL_PACKET_ID | SYNC_PACKET_ID;
  remote_id_ = INITIAL_PACKET_ID;
}

// ---- I/O ------------------------------------------------------------------------------------

void kd_server::accept_connection() {
  int fd = ::accept(listen_fd_, nullptr, nullptr);
  if (fd < 0) return;
  if (conn_fd_ >= 0) ::close(conn_fd_);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  conn_fd_ = fd;
  inbuf_.clear();
  held_.reset();
  log("debugger connected");
}

void kd_server::drop_connection() {
  if (pty_slave_fd_ >= 0) return;  // a serial line stays; only sockets come and go
  if (conn_fd_ >= 0) ::close(conn_fd_);
  conn_fd_ = -1;
  inbuf_.clear();
  held_.reset();
  log("debugger disconnected");
}

void kd_server::service(int timeout_ms) {
  std::vector<pollfd> fds;
  fds.push_back({listen_fd_, POLLIN, 0});
  fds.push_back({conn_fd_, POLLIN, 0});
  fds.push_back({control_listen_fd_, POLLIN, 0});
  for (int fd : control_fds_) fds.push_back({fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  if (fds[0].revents & POLLIN) accept_connection();
  if (conn_fd_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
    uint8_t chunk[8192];
    const ssize_t n = ::read(conn_fd_, chunk, sizeof(chunk));
    if (n <= 0) {
      drop_connection();
    } else {
      inbuf_.insert(inbuf_.end(), chunk, chunk + n);
      last_rx_ = steady::now();
    }
  }
  if (control_listen_fd_ >= 0 && (fds[2].revents & POLLIN)) {
    int fd = ::accept(control_listen_fd_, nullptr, nullptr);
    if (fd >= 0) {
      control_fds_.push_back(fd);
      control_buffers_.emplace_back();
    }
  }
  for (size_t i = 3; i < fds.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
    const size_t c = i - 3;
    char chunk[4096];
    const ssize_t n = ::read(control_fds_[c], chunk, sizeof(chunk));
    if (n <= 0) {
      ::close(control_fds_[c]);
      control_fds_[c] = -1;
      continue;
    }
    control_buffers_[c].append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = control_buffers_[c].find('\n')) != std::string::npos) {
      std::string line = control_buffers_[c].substr(0, nl);
      control_buffers_[c].erase(0, nl + 1);
      handle_control_line(control_fds_[c], line);
    }
  }
  for (size_t c = control_fds_.size(); c-- > 0;) {
    if (control_fds_[c] < 0) {
      control_fds_.erase(control_fds_.begin() + static_cast<long>(c));
      control_buffers_.erase(control_buffers_.begin() + static_cast<long>(c));
    }
  }
}

std::optional<kd_server::frame> kd_server::parse() {
  while (!inbuf_.empty()) {
    if (inbuf_[0] == BREAKIN_PACKET_BYTE) {
      inbuf_.erase(inbuf_.begin());
      return frame{frame::kind::break_in};
    }
    if (inbuf_.size() < 4) break;
    uint32_t leader;
    std::memcpy(&leader, inbuf_.data(), 4);
    if (leader != PACKET_LEADER && leader != CONTROL_PACKET_LEADER) {
      inbuf_.erase(inbuf_.begin());
      continue;
    }
    if (inbuf_.size() < sizeof(KD_PACKET)) break;
    KD_PACKET h;
    std::memcpy(&h, inbuf_.data(), sizeof(h));
    if (leader == CONTROL_PACKET_LEADER) {
      inbuf_.erase(inbuf_.begin(), inbuf_.begin() + sizeof(h));
      return frame{frame::kind::control, h.PacketType, h.PacketId, {}};
    }
    if (h.ByteCount > PACKET_MAX_SIZE) {
      inbuf_.erase(inbuf_.begin());
      continue;
    }
    const size_t total = sizeof(h) + h.ByteCount + 1;
    if (inbuf_.size() < total) {
      if (steady::now() - last_rx_ > std::chrono::milliseconds(200)) {
        inbuf_.erase(inbuf_.begin());  // a stalled partial packet
        continue;
      }
      break;
    }
    std::vector<uint8_t> payload(inbuf_.begin() + sizeof(h),
                                 inbuf_.begin() + static_cast<long>(sizeof(h) + h.ByteCount));
    const bool good =
        inbuf_[total - 1] == PACKET_TRAILING_BYTE && byte_sum(payload.data(), payload.size()) == h.Checksum;
    if (!good) {
      inbuf_.erase(inbuf_.begin());
      return frame{frame::kind::bad_data, h.PacketType, h.PacketId, {}};
    }
    inbuf_.erase(inbuf_.begin(), inbuf_.begin() + static_cast<long>(total));
    return frame{frame::kind::data, h.PacketType, h.PacketId, std::move(payload)};
  }
  return std::nullopt;
}

void kd_server::write_frame(std::vector<uint8_t> bytes, bool data) {
  if (conn_fd_ < 0) return;
  std::uniform_real_distribution<double> chance(0, 1);
  ++stats_.frames;
  const faults& f = options_.wire;
  if (chance(rng_) < f.drop) {
    ++stats_.dropped;
    return;
  }
  if (chance(rng_) < f.corrupt) {
    ++stats_.corrupted;
    // Only what the checksum, trailer or leader covers: KDCOM cannot notice a flipped id.
    size_t at = data && bytes.size() > sizeof(KD_PACKET)
                    ? sizeof(KD_PACKET) + rng_() % (bytes.size() - sizeof(KD_PACKET))
                    : rng_() % 4;
    bytes[at] ^= static_cast<uint8_t>(1u << (rng_() % 8));
  }
  if (f.delay > 0 && chance(rng_) < f.delay) {
    ++stats_.delayed;
    std::this_thread::sleep_for(std::chrono::milliseconds(f.delay_ms));
  }
  if (!held_ && chance(rng_) < f.reorder) {
    ++stats_.reordered;
    held_ = std::move(bytes);
    held_at_ = steady::now();
    return;
  }
  auto put = [this](const std::vector<uint8_t>& b) {
    if (conn_fd_ < 0) return;
    if (::write(conn_fd_, b.data(), b.size()) != static_cast<ssize_t>(b.size())) drop_connection();
  };
  put(bytes);
  if (held_) {
    put(*held_);
    held_.reset();
  }
}

void kd_server::send_control(uint16_t type, uint32_t id) {
  KD_PACKET h{CONTROL_PACKET_LEADER, type, 0, id, 0};
  write_frame(bytes_of(h), false);
}

kd_server::send_result kd_server::send_data(uint16_t type, const std::vector<uint8_t>& payload) {
  for (int attempt = 0; attempt < 400; ++attempt) {
    if (conn_fd_ < 0) return send_result::lost;
    if (attempt > 0) ++stats_.retransmits;
    KD_PACKET h{PACKET_LEADER, type, static_cast<uint16_t>(payload.size()), current_id_,
                byte_sum(payload.data(), payload.size())};
    std::vector<uint8_t> bytes = bytes_of(h);
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    bytes.push_back(PACKET_TRAILING_BYTE);
    write_frame(std::move(bytes), true);
    const auto deadline = steady::now() + std::chrono::milliseconds(options_.ack_timeout_ms);
    bool again = false;
    while (!again && steady::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
      service(static_cast<int>(std::max<long>(1, left)));
      if (conn_fd_ < 0) return send_result::lost;
      while (auto f = parse()) {
        if (f->what == frame::kind::break_in) {
          if (running_ && !options_.no_break_in) break_pending_ = true;
        } else if (f->what == frame::kind::control) {
          if (f->type == PACKET_TYPE_KD_ACKNOWLEDGE && (f->id & ~SYNC_PACKET_ID) == (current_id_ & ~SYNC_PACKET_ID)) {
            current_id_ = (current_id_ ^ 1) & ~SYNC_PACKET_ID;
            return send_result::acked;
          }
          if (f->type == PACKET_TYPE_KD_RESEND) {
            ++stats_.resend_requests;
            again = true;
            break;
          }
          if (f->type == PACKET_TYPE_KD_RESET) {
            reset_ids();
            send_control(PACKET_TYPE_KD_RESET, 0);
            return send_result::reset;
          }
        } else {
          // kddll's KdReceivePacket waiting for an ACK: any data packet means the debugger has
          // moved on, so it holds ours; its packet is not taken but asked for again (RESEND).
          if (f->what == frame::kind::bad_data) ++stats_.bad_frames;
          if (type == PACKET_TYPE_KD_DEBUG_IO) ++stats_.prints_superseded;  // the debugger never saw it
          send_control(PACKET_TYPE_KD_RESEND, 0);
          current_id_ = (current_id_ ^ 1) & ~SYNC_PACKET_ID;
          return send_result::acked;
        }
      }
    }
  }
  return send_result::lost;
}

void kd_server::handle_idle_frame(frame& f) {
  switch (f.what) {
    case frame::kind::break_in:
      if (running_ && !options_.no_break_in) break_pending_ = true;
      return;
    case frame::kind::bad_data:
      ++stats_.bad_frames;
      send_control(PACKET_TYPE_KD_RESEND, 0);
      return;
    case frame::kind::control:
      if (f.type == PACKET_TYPE_KD_RESET) {
        reset_ids();
        send_control(PACKET_TYPE_KD_RESET, 0);
      }
      // A halted kernel waits for a request in KdpSendWaitContinue; RESET, RESEND or any other
      // control packet there makes it send its state change again (KdPacketNeedsResend).
      if (!running_ && f.type != PACKET_TYPE_KD_ACKNOWLEDGE) {
        if (f.type == PACKET_TYPE_KD_RESEND) ++stats_.resend_requests;
        report_pending_ = true;
      }
      return;
    case frame::kind::data: break;
  }
  if (options_.reset_storm) {
    reset_ids();
    send_control(PACKET_TYPE_KD_RESET, 0);
    return;
  }
  if (f.id != remote_id_) {
    ++stats_.duplicates;
    send_control(PACKET_TYPE_KD_ACKNOWLEDGE, f.id);
    return;
  }
  send_control(PACKET_TYPE_KD_ACKNOWLEDGE, f.id);
  remote_id_ ^= 1;
  if (f.type == PACKET_TYPE_KD_STATE_MANIPULATE && !running_ && !apply_injection()) handle_manipulate(f.payload);
}

bool kd_server::apply_injection() {
  if (inject_ == injection::none) return false;
  const injection what = std::exchange(inject_, injection::none);
  ++stats_.injected;
  if (what == injection::same) {
    report_pending_ = true;  // the same state change again (its buffer is kept in last_report_)
  } else {
    break_with_status(inject_cpu_, DBG_STATUS_CONTROL_C);
  }
  return true;
}

// ---- The target -----------------------------------------------------------------------------

void kd_server::break_with_status(int cpu, uint64_t status) {
  machine_->call_break_with_status(cpu, status);
  // Executing the int3 traps; the kernel backs rip up to the int3 before it reports.
  report_exception(cpu, STATUS_BREAKPOINT);
}

void kd_server::report_exception(int cpu, uint32_t code) {
  cpu_state& c = machine_->cpu(cpu);
  const uint64_t pc = c.context.Rip;
  // Like KdpSetCommonState: table entries inside the reported instruction stream are deleted.
  breakpoints_.delete_in(*machine_, cpu, pc, pc + 16);
  DBGKD_ANY_WAIT_STATE_CHANGE s{};
  s.NewState = DbgKdExceptionStateChange;
  s.Processor = static_cast<uint16_t>(cpu);
  s.NumberProcessors = static_cast<uint32_t>(machine_->cpu_count());
  s.Thread = current_thread(cpu);
  s.ProgramCounter = pc;
  s.u.Exception.ExceptionRecord.ExceptionCode = static_cast<int32_t>(code);
  s.u.Exception.ExceptionRecord.ExceptionAddress = pc;
  s.u.Exception.ExceptionRecord.NumberParameters = code == STATUS_BREAKPOINT ? 1 : 0;
  s.u.Exception.FirstChance = 1;
  s.ControlReport.Dr6 = c.special.KernelDr6;
  s.ControlReport.Dr7 = c.special.KernelDr7;
  s.ControlReport.EFlags = c.context.EFlags;
  s.ControlReport.InstructionCount =
      static_cast<uint16_t>(machine_->read_virtual(cpu, pc, s.ControlReport.InstructionStream, 16));
  s.ControlReport.SegCs = c.context.SegCs;
  s.ControlReport.SegDs = c.context.SegDs;
  s.ControlReport.SegEs = c.context.SegEs;
  s.ControlReport.SegFs = c.context.SegFs;
  last_report_ = bytes_of(s);
  current_cpu_ = cpu;
  running_ = false;
  tracing_ = false;
  report_pending_ = true;
}

DBGKD_GET_VERSION64 kd_server::version_block() const {
  DBGKD_GET_VERSION64 v{};
  if (machine_->guest_kernel()) {
    uint64_t block = 0;
    const uint64_t pcr = machine_->cpu(0).msrs.at(0xC0000101);
    machine_->read_virtual(0, pcr + 0x108, reinterpret_cast<uint8_t*>(&block), 8);  // KPCR.KdVersionBlock
    machine_->read_virtual(0, block, reinterpret_cast<uint8_t*>(&v), sizeof(v));
    return v;
  }
  v.MajorVersion = 0xF;
  v.MinorVersion = 19041;
  v.ProtocolVersion = 6;
  v.KdSecondaryVersion = 2;
  v.Flags = 0x7;  // MP | DATA | PTR64
  v.MachineType = 0x8664;
  v.MaxPacketType = 12;
  v.MaxStateChange = 3;
  v.MaxManipulate = 0x34;
  v.KernBase = kKernelBase;
  v.PsLoadedModuleList = kPsLoadedModuleList;
  v.DebuggerDataList = kKdDebuggerData;
  return v;
}

uint64_t kd_server::current_thread(int cpu) const {
  if (!machine_->guest_kernel()) return kKernelBase + 0x380000 + static_cast<uint64_t>(cpu) * 0x1000;
  uint64_t thread = 0;
  const uint64_t pcr = machine_->cpu(cpu).msrs.at(0xC0000101);
  machine_->read_virtual(cpu, pcr + 0x188, reinterpret_cast<uint8_t*>(&thread), 8);  // KPCR.Prcb.CurrentThread
  return thread;
}

uint32_t kd_server::kernel_image_size() const {
  if (!machine_->guest_kernel()) return 0x800000;
  const uint64_t base = version_block().KernBase;
  uint32_t lfanew = 0, size = 0;
  machine_->read_virtual(0, base + 0x3c, reinterpret_cast<uint8_t*>(&lfanew), 4);
  machine_->read_virtual(0, base + lfanew + 24 + 0x38, reinterpret_cast<uint8_t*>(&size), 4);  // SizeOfImage
  return size;
}

void kd_server::report_load_symbols(const std::string& path, uint64_t base, uint32_t size) {
  DBGKD_ANY_WAIT_STATE_CHANGE s{};
  s.NewState = DbgKdLoadSymbolsStateChange;
  s.Processor = 0;
  s.NumberProcessors = static_cast<uint32_t>(machine_->cpu_count());
  s.Thread = current_thread(0);
  s.ProgramCounter = machine_->cpu(0).context.Rip;
  s.u.LoadSymbols.PathNameLength = static_cast<uint32_t>(path.size() + 1);
  s.u.LoadSymbols.BaseOfDll = base;
  s.u.LoadSymbols.SizeOfImage = size;
  s.ControlReport.EFlags = machine_->cpu(0).context.EFlags;
  s.ControlReport.InstructionCount =
      static_cast<uint16_t>(machine_->read_virtual(0, s.ProgramCounter, s.ControlReport.InstructionStream, 16));
  last_report_ = bytes_of(s);
  last_report_.insert(last_report_.end(), path.begin(), path.end());
  last_report_.push_back(0);
  current_cpu_ = 0;
  running_ = false;
  tracing_ = false;
  report_pending_ = true;
}

void kd_server::send_report() {
  report_pending_ = false;
  ++stats_.state_changes;
  const send_result r = send_data(PACKET_TYPE_KD_STATE_CHANGE64, last_report_);
  if (r != send_result::acked) report_pending_ = true;  // again after the RESET / next connection
}

void kd_server::send_print(const std::string& text) {
  DBGKD_DEBUG_IO io{};
  io.ApiNumber = DbgKdPrintStringApi;
  io.Processor = static_cast<uint16_t>(current_cpu_);
  io.u.PrintString.LengthOfString = static_cast<uint32_t>(text.size());
  std::vector<uint8_t> payload = bytes_of(io);
  payload.insert(payload.end(), text.begin(), text.end());
  // Nobody listening means the print is lost, as on a real kernel without a debugger.
  if (send_data(PACKET_TYPE_KD_DEBUG_IO, payload) == send_result::reset && !running_) report_pending_ = true;
}

void kd_server::reboot() {
  ++stats_.reboots;
  log("rebooting");
  if (!machine_->boot()) {
    log("this machine cannot restart; it stays halted");
    report_pending_ = true;
    return;
  }
  breakpoints_.clear();
  bugchecked_ = false;
  break_pending_ = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  inbuf_.clear();
  reset_ids();  // the new boot starts a new stream: its first packet carries SYNC
  report_load_symbols("\\SystemRoot\\system32\\ntoskrnl.exe", version_block().KernBase, kernel_image_size());
}

void kd_server::bugcheck() {
  bugchecked_ = true;
  send_print(
      "\n*** Fatal System Error: 0x000000e2\n                       "
      "(0x0000000000000000,0x0000000000000000,0x0000000000000000,0x0000000000000000)\n\n");
  break_with_status(0, DBG_STATUS_BUGCHECK_FIRST);
}

void kd_server::handle_manipulate(const std::vector<uint8_t>& payload) {
  ++stats_.requests;
  DBGKD_MANIPULATE_STATE64 m{};
  std::memcpy(&m, payload.data(), std::min(payload.size(), sizeof(m)));
  ++requests_by_api_[m.ApiNumber];
  const uint8_t* data = payload.data() + std::min(payload.size(), sizeof(m));
  const size_t data_size = payload.size() - std::min(payload.size(), sizeof(m));
  const int cpu = m.Processor;
  DBGKD_MANIPULATE_STATE64 r = m;
  r.ReturnStatus = STATUS_SUCCESS;
  std::vector<uint8_t> extra;
  constexpr uint32_t kMaxData = PACKET_MAX_SIZE - sizeof(DBGKD_MANIPULATE_STATE64);
  if (cpu >= machine_->cpu_count()) {
    r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
  } else {
    cpu_state& c = machine_->cpu(cpu);
    switch (m.ApiNumber) {
      case DbgKdReadVirtualMemoryApi:
      case DbgKdReadPhysicalMemoryApi: {
        const uint32_t want = std::min(m.u.ReadMemory.TransferCount, kMaxData);
        extra.resize(want);
        const uint32_t got = m.ApiNumber == DbgKdReadVirtualMemoryApi
                                 ? machine_->read_virtual(cpu, m.u.ReadMemory.TargetBaseAddress, extra.data(), want)
                                 : machine_->read_physical(m.u.ReadMemory.TargetBaseAddress, extra.data(), want);
        extra.resize(got);
        r.u.ReadMemory.ActualBytesRead = got;
        if (got < m.u.ReadMemory.TransferCount) r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
        break;
      }
      case DbgKdWriteVirtualMemoryApi:
      case DbgKdWritePhysicalMemoryApi: {
        const uint32_t want = static_cast<uint32_t>(std::min<size_t>(m.u.WriteMemory.TransferCount, data_size));
        const uint32_t put = m.ApiNumber == DbgKdWriteVirtualMemoryApi
                                 ? machine_->write_virtual(cpu, m.u.WriteMemory.TargetBaseAddress, data, want)
                                 : machine_->write_physical(m.u.WriteMemory.TargetBaseAddress, data, want);
        r.u.WriteMemory.ActualBytesWritten = put;
        if (put < m.u.WriteMemory.TransferCount) r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
        break;
      }
      case DbgKdGetContextApi: extra = bytes_of(c.context); break;
      case DbgKdSetContextExApi: {
        const DBGKD_CONTEXT_EX e = m.u.ContextEx;
        const uint32_t total = e.BytesCopied;  // the total size rides in BytesCopied
        if (total == 0 || total > sizeof(CONTEXT) || e.Offset + e.ByteCount > total || e.ByteCount > data_size) {
          r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
          break;
        }
        if (e.Offset == 0) c.staged_context.assign(total, 0);
        if (c.staged_context.size() != total) {
          r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
          break;
        }
        std::memcpy(c.staged_context.data() + e.Offset, data, e.ByteCount);
        if (e.Offset + e.ByteCount == total) std::memcpy(&c.context, c.staged_context.data(), total);
        r.u.ContextEx.BytesCopied = e.ByteCount;
        break;
      }
      case DbgKdReadControlSpaceApi:
        if (m.u.ReadMemory.TargetBaseAddress != 2) {
          r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
        } else {
          const uint32_t n = std::min<uint32_t>(m.u.ReadMemory.TransferCount, sizeof(KSPECIAL_REGISTERS));
          extra = bytes_of(c.special);
          extra.resize(n);
          r.u.ReadMemory.ActualBytesRead = n;
        }
        break;
      case DbgKdWriteControlSpaceApi:
        if (m.u.WriteMemory.TargetBaseAddress != 2) {
          r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
        } else {
          const uint32_t n = static_cast<uint32_t>(std::min<size_t>(
              {static_cast<size_t>(m.u.WriteMemory.TransferCount), data_size, sizeof(KSPECIAL_REGISTERS)}));
          std::memcpy(&c.special, data, n);
          r.u.WriteMemory.ActualBytesWritten = n;
        }
        break;
      case DbgKdWriteBreakPointApi: {
        auto handle = breakpoints_.add(*machine_, cpu, m.u.WriteBreakPoint.BreakPointAddress);
        if (handle) {
          r.u.WriteBreakPoint.BreakPointHandle = *handle;
        } else {
          r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
        }
        break;
      }
      case DbgKdRestoreBreakPointApi:
        if (!breakpoints_.remove(*machine_, cpu, m.u.RestoreBreakPoint.BreakPointHandle)) {
          r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
        }
        break;
      case DbgKdGetVersionApi: {
        DBGKD_GET_VERSION64& v = r.u.GetVersion64;
        v = version_block();
        break;
      }
      case DbgKdReadMachineSpecificRegister: {
        const uint32_t msr = m.u.ReadWriteMsr.Msr;
        uint64_t value = 0;
        if (msr == 0x10) {
          value = tsc_ += 12345;
        } else if (auto it = c.msrs.find(msr); it != c.msrs.end()) {
          value = it->second;
        } else {
          r.ReturnStatus = static_cast<int32_t>(STATUS_NO_SUCH_DEVICE);
        }
        r.u.ReadWriteMsr.DataValueLow = static_cast<uint32_t>(value);
        r.u.ReadWriteMsr.DataValueHigh = static_cast<uint32_t>(value >> 32);
        break;
      }
      case DbgKdWriteMachineSpecificRegister:
        c.msrs[m.u.ReadWriteMsr.Msr] =
            static_cast<uint64_t>(m.u.ReadWriteMsr.DataValueHigh) << 32 | m.u.ReadWriteMsr.DataValueLow;
        break;
      case DbgKdContinueApi2:
        if (static_cast<uint32_t>(m.u.Continue2.ContinueStatus) != 0x00010002 &&
            static_cast<uint32_t>(m.u.Continue2.ContinueStatus) != 0x80010001) {
          r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL);
          break;
        }
        // Like KdpGetStateChange: the control set's Dr7 goes to every processor, Dr6 is cleared.
        for (int i = 0; i < machine_->cpu_count(); ++i) {
          machine_->cpu(i).special.KernelDr7 = m.u.Continue2.ControlSet.Dr7;
          machine_->cpu(i).special.KernelDr6 = kDr6Idle;
        }
        if (bugchecked_) {
          reboot();  // after a bugcheck the machine writes its dump and restarts
          return;
        }
        tracing_ = m.u.Continue2.ControlSet.TraceFlag != 0;
        running_ = true;
        machine_->resume(tracing_, cpu);
        return;  // no reply
      case DbgKdSwitchProcessor:
        report_exception(cpu, STATUS_BREAKPOINT);
        return;  // the new processor reports instead of a reply
      case DbgKdRebootApi: reboot_requested_ = true; return;
      case DbgKdCauseBugCheckApi: bugcheck(); return;
      default: r.ReturnStatus = static_cast<int32_t>(STATUS_UNSUCCESSFUL); break;
    }
  }
  std::vector<uint8_t> reply = bytes_of(r);
  reply.insert(reply.end(), extra.begin(), extra.end());
  if (send_data(PACKET_TYPE_KD_STATE_MANIPULATE, reply) == send_result::reset) report_pending_ = true;
}

void kd_server::run_slice() {
  if (break_pending_) {
    // The clock interrupt polls for the break-in byte and calls DbgBreakPointWithStatus.
    break_pending_ = false;
    const cpu_event meanwhile = machine_->halt();
    if (meanwhile.what != cpu_event::kind::none) {
      report_event(meanwhile);  // a processor stopped on its own before the interrupt came
      return;
    }
    break_with_status(0, DBG_STATUS_CONTROL_C);
    return;
  }
  if (!loads_.empty() && conn_fd_ >= 0) {
    // A driver load: the kernel reports it and waits for the debugger to continue.
    machine_->halt();
    report_load_symbols(loads_.front(), next_driver_base_, 0x10000);
    loads_.pop_front();
    next_driver_base_ += 0x10000;
    return;
  }
  while (!prints_.empty() && conn_fd_ >= 0) {
    std::string text = std::move(prints_.front());
    prints_.pop_front();
    send_print(text);
  }
  report_event(machine_->run(tracing_, current_cpu_, [this](const std::string& text) {
    if (conn_fd_ >= 0) send_print(text);
    return running_;  // false after a RESET or reboot while printing
  }));
}

void kd_server::report_event(const cpu_event& e) {
  switch (e.what) {
    case cpu_event::kind::none: return;
    case cpu_event::kind::breakpoint: report_exception(e.cpu, STATUS_BREAKPOINT); return;
    case cpu_event::kind::illegal: report_exception(e.cpu, STATUS_ILLEGAL_INSTRUCTION); return;
    case cpu_event::kind::single_step:
      // Instruction breakpoints fault before executing; data watches and the trace flag trap after.
      machine_->cpu(e.cpu).special.KernelDr6 = kDr6Idle | e.dr_hits | (e.traced ? kDr6SingleStep : 0);
      report_exception(e.cpu, STATUS_SINGLE_STEP);
      return;
    case cpu_event::kind::lost:
      std::fprintf(stderr, "kd-sim: %s\n", e.why.c_str());
      quit_ = true;
      return;
  }
}

// ---- Control channel ------------------------------------------------------------------------

void kd_server::handle_control_line(int fd, const std::string& line) {
  std::istringstream in(line);
  std::string cmd;
  in >> cmd;
  std::string answer;
  char buf[256];
  if (cmd == "state") {
    if (running_) {
      answer = "running";
    } else {
      std::snprintf(buf, sizeof(buf), "halted cpu=%d rip=0x%" PRIx64, current_cpu_,
                    machine_->cpu(current_cpu_).context.Rip);
      answer = buf;
    }
  } else if (cmd == "breakpoints") {
    auto list = breakpoints_.addresses();
    answer = std::to_string(list.size());
    for (uint64_t a : list) {
      std::snprintf(buf, sizeof(buf), " 0x%" PRIx64, a);
      answer += buf;
    }
  } else if (cmd == "peek" || cmd == "peekphys") {
    uint64_t address = 0;
    uint32_t size = 0;
    in >> std::hex >> address >> std::dec >> size;
    std::vector<uint8_t> bytes(std::min<uint32_t>(size, 4096));
    const uint32_t got = cmd == "peek"
                             ? machine_->read_virtual(0, address, bytes.data(), static_cast<uint32_t>(bytes.size()))
                             : machine_->read_physical(address, bytes.data(), static_cast<uint32_t>(bytes.size()));
    answer = hex_bytes(bytes.data(), got);
  } else if (cmd == "reg") {
    int cpu = 0;
    std::string name;
    in >> cpu >> name;
    if (cpu < 0 || cpu >= machine_->cpu_count()) {
      answer = "error no such cpu";
    } else {
      const cpu_state& c = machine_->cpu(cpu);
      uint64_t v = 0;
      if (name == "rip")
        v = c.context.Rip;
      else if (name == "rax")
        v = c.context.Rax;
      else if (name == "rbx")
        v = c.context.Rbx;
      else if (name == "rcx")
        v = c.context.Rcx;
      else if (name == "rsp")
        v = c.context.Rsp;
      else if (name == "cr3")
        v = c.special.Cr3;
      else if (name == "dr7")
        v = c.special.KernelDr7;
      else if (name == "dr0")
        v = c.special.KernelDr0;
      std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
      answer = buf;
    }
  } else if (cmd == "print") {
    std::string rest;
    std::getline(in, rest);
    if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
    prints_.push_back(rest + "\n");
    answer = "ok";
  } else if (cmd == "load") {
    std::string rest;
    std::getline(in, rest);
    if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
    loads_.push_back(rest);
    answer = "ok";
  } else if (cmd == "inject") {
    // inject same | inject cpu N: at the next request while halted (see apply_injection).
    std::string what;
    in >> what;
    if (what == "same") {
      inject_ = injection::same;
      answer = "ok";
    } else if (what == "cpu" && (in >> inject_cpu_) && inject_cpu_ >= 0 && inject_cpu_ < machine_->cpu_count()) {
      inject_ = injection::processor;
      answer = "ok";
    } else {
      answer = "error inject takes 'same' or 'cpu N'";
    }
  } else if (cmd == "reboot") {
    reboot_requested_ = true;
    answer = "ok";
  } else if (cmd == "faults") {
    in >> options_.wire.drop >> options_.wire.corrupt >> options_.wire.delay >> options_.wire.delay_ms >>
        options_.wire.reorder;
    answer = "ok";
  } else if (cmd == "stats") {
    std::snprintf(buf, sizeof(buf),
                  "frames=%" PRIu64 " dropped=%" PRIu64 " corrupted=%" PRIu64 " delayed=%" PRIu64 " reordered=%" PRIu64
                  " retransmits=%" PRIu64 " resend_requests=%" PRIu64 " bad_frames=%" PRIu64 " duplicates=%" PRIu64
                  " requests=%" PRIu64 " reboots=%" PRIu64 " state_changes=%" PRIu64 " injected=%" PRIu64
                  " prints_superseded=%" PRIu64,
                  stats_.frames, stats_.dropped, stats_.corrupted, stats_.delayed, stats_.reordered, stats_.retransmits,
                  stats_.resend_requests, stats_.bad_frames, stats_.duplicates, stats_.requests, stats_.reboots,
                  stats_.state_changes, stats_.injected, stats_.prints_superseded);
    answer = buf;
  } else if (cmd == "requests") {
    // requests: "total=N Name=N ..." (ApiNumbers without a name as hex); requests reset: zero them.
    std::string what;
    in >> what;
    if (what == "reset") {
      requests_by_api_.clear();
      answer = "ok";
    } else {
      uint64_t total = 0;
      std::string names;
      for (const auto& [api, n] : requests_by_api_) {
        total += n;
        const char* name = manipulate_api_name(api);
        if (name)
          std::snprintf(buf, sizeof(buf), " %s=%" PRIu64, name, n);
        else
          std::snprintf(buf, sizeof(buf), " 0x%x=%" PRIu64, api, n);
        names += buf;
      }
      answer = "total=" + std::to_string(total) + names;
    }
  } else if (cmd == "quit") {
    quit_ = true;
    answer = "ok";
  } else {
    answer = "error unknown command '" + cmd + "'";
  }
  answer += "\n";
  [[maybe_unused]] auto n = ::write(fd, answer.data(), answer.size());
}

int kd_server::run() {
  std::string where = options_.listen;
  if (options_.listen == "pty") {
    // A pseudo-terminal stands in for a serial line: the debugger opens the slave as a device.
    conn_fd_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (conn_fd_ < 0 || ::grantpt(conn_fd_) != 0 || ::unlockpt(conn_fd_) != 0) {
      std::fprintf(stderr, "kd-sim: cannot create a pseudo-terminal: %s\n", std::strerror(errno));
      return 1;
    }
    where = ::ptsname(conn_fd_);
    // Keeping the slave open ourselves stops the master from reporting a hang-up between users.
    pty_slave_fd_ = ::open(where.c_str(), O_RDWR | O_NOCTTY);
    termios tio{};
    if (pty_slave_fd_ < 0 || ::tcgetattr(pty_slave_fd_, &tio) != 0) {
      std::fprintf(stderr, "kd-sim: cannot open %s: %s\n", where.c_str(), std::strerror(errno));
      return 1;
    }
    ::cfmakeraw(&tio);
    ::tcsetattr(pty_slave_fd_, TCSANOW, &tio);
  } else {
    listen_fd_ = listen_on(options_.listen);
  }
  if (listen_fd_ < 0 && conn_fd_ < 0) {
    std::fprintf(stderr, "kd-sim: cannot listen on %s: %s\n", options_.listen.c_str(), std::strerror(errno));
    return 1;
  }
  if (!options_.control.empty()) {
    control_listen_fd_ = listen_on(options_.control);
    if (control_listen_fd_ < 0) {
      std::fprintf(stderr, "kd-sim: cannot listen on %s: %s\n", options_.control.c_str(), std::strerror(errno));
      return 1;
    }
  }
  std::printf("ready %s\n", where.c_str());
  std::fflush(stdout);
  while (!quit_) {
    if (held_ && steady::now() - held_at_ > std::chrono::milliseconds(50)) {
      auto b = std::move(*held_);
      held_.reset();
      if (conn_fd_ >= 0 && ::write(conn_fd_, b.data(), b.size()) < 0) drop_connection();
    }
    if (reboot_requested_) {
      reboot_requested_ = false;
      reboot();
      continue;
    }
    if (auto f = parse()) {
      handle_idle_frame(*f);
      continue;
    }
    if (!running_ && report_pending_ && conn_fd_ >= 0) {
      send_report();
      continue;
    }
    if (running_) {
      run_slice();
      service(1);
    } else {
      service(20);
    }
  }
  return 0;
}

}  // namespace kdsim
