#include "gdb_session.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>

#include <elf.h>

#include <toolhost/rsp/hex.hpp>
#include <toolhost/rsp/packet.hpp>
#include <toolhost/sdk/json.hpp>
#include <toolhost/signals/posix_signals.hpp>

namespace toolhost::gdb {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kRequestTimeout{10000};
constexpr uint64_t kPage = 4096;

absl::Status stub_error(std::string_view what, std::string_view reply) {
  if (reply.empty()) return absl::UnimplementedError("the stub does not support " + std::string(what));
  return absl::InternalError("the stub refused " + std::string(what) + " (" + std::string(reply) + ")");
}

bool is_error_reply(std::string_view reply) {
  return reply.size() >= 1 && reply[0] == 'E' && (reply.size() == 3 || reply.find('.') == 1);
}

std::string hex_byte(int value) {
  const auto byte = static_cast<uint8_t>(value);
  return rsp::to_hex(&byte, 1);
}

std::string thread_text(int64_t thread) { return thread < 0 ? "-1" : rsp::number(static_cast<uint64_t>(thread)); }

std::string basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

absl::StatusOr<std::unique_ptr<session>> session::open(std::string_view address, milliseconds timeout) {
  std::unique_ptr<session> s(new session());
  if (auto st = s->conn_.open(address, timeout); !st.ok()) return st;
  if (auto st = s->handshake(timeout); !st.ok()) return st;
  return s;
}

session::~session() { conn_.close(); }

absl::StatusOr<std::string> session::request(std::string_view payload) {
  return conn_.request(payload, kRequestTimeout);
}

absl::Status session::handshake(milliseconds timeout) {
  // QEMU stops a running machine when a debugger connects and may announce that with a stop
  // reply nobody asked for; drop what arrives before the first request, and skip a stop reply
  // that comes in place of the qSupported answer.
  while (conn_.receive(milliseconds(50)).ok()) {
  }
  auto features = conn_.request("qSupported:swbreak+;hwbreak+;vContSupported+;xmlRegisters=i386", timeout);
  for (int stray = 0; features.ok() && stray < 4 && parse_stop_reply(*features).has_value(); ++stray) {
    features = conn_.receive(timeout);
  }
  if (!features.ok()) {
    return absl::UnavailableError("connected, but the peer does not speak the GDB remote protocol: " +
                                  std::string(features.status().message()));
  }
  features_ = *features;
  auto has = [&](std::string_view name) {
    std::string_view rest = features_;
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      std::string_view f = rest.substr(0, semi);
      if (f == name) return true;
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    }
    return false;
  };
  if (const size_t p = features_.find("PacketSize="); p != std::string::npos) {
    const size_t end = features_.find(';', p);
    if (auto v = rsp::parse_number(std::string_view(features_).substr(p + 11, end - p - 11))) {
      packet_size_ = std::clamp<size_t>(*v, 256, 1 << 20);
    }
  }
  has_xfer_features_ = has("qXfer:features:read+");
  has_svr4_ = has("qXfer:libraries-svr4:read+");
  has_exec_file_ = has("qXfer:exec-file:read+");
  has_auxv_ = has("qXfer:auxv:read+");
  has_pass_signals_ = has("QPassSignals+");
  has_siginfo_ = has("qXfer:siginfo:read+");
  if (has("QStartNoAckMode+")) {
    auto ok = request("QStartNoAckMode");
    if (ok.ok() && *ok == "OK") conn_.set_no_ack(true);
  }
  if (auto v = request("vCont?"); v.ok() && v->starts_with("vCont")) {
    has_vcont_ = true;
    has_vcont_step_ = v->find(";s") != std::string::npos;
  }
  // '?' exactly once: QEMU treats it as a new debugger attaching and drops its breakpoints.
  auto initial = request("?");
  if (!initial.ok()) return initial.status();

  if (!has_xfer_features_) {
    return absl::UnimplementedError(
        "the stub offers no target description (qXfer:features), so its register "
        "layout is unknown; use a gdbserver or QEMU that sends target.xml");
  }
  auto desc = read_target_description([this](std::string_view annex) { return read_xfer("features", annex); });
  if (!desc.ok()) return desc.status();
  description_ = std::move(*desc);
  for (const auto& r : description_.registers) {
    if (r.role == "pc") pc_regnum_ = static_cast<int>(r.regnum);
  }
  if (auto q = request("qC"); q.ok() && q->starts_with("QC")) {
    if (auto t = parse_thread_id(std::string_view(*q).substr(2))) current_thread_ = *t;
  }
  if (auto g = request("g"); g.ok() && !is_error_reply(*g)) g_bytes_ = static_cast<uint32_t>(g->size() / 2);
  // QEMU's physical-memory mode: a stub that accepts it is a whole machine.
  if (auto phys = request("Qqemu.PhyMemMode:0"); phys.ok() && *phys == "OK") {
    has_physical_ = true;
    system_ = true;
  }
  if (has_exec_file_) {
    if (auto exe = read_xfer("exec-file", ""); exe.ok()) executable_ = *exe;
  }
  if (!system_) pid_ = current_thread_;
  // Whether gdbserver attached to the process (--attach) or started it: "1" or "0".
  if (!system_) {
    if (auto a = request("qAttached"); a.ok() && (*a == "1" || *a == "0")) attached_ = *a;
  }

  if (auto reply = parse_stop_reply(*initial, pc_regnum_)) {
    record_stop(*reply);
    pending_stop_->reason = TOOLHOST_DT_STOP_UNKNOWN;
    std::snprintf(pending_stop_->description, sizeof(pending_stop_->description), "%s", "stopped at attach");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> session::read_xfer(std::string_view object, std::string_view annex) {
  std::string out;
  const size_t chunk = std::max<size_t>(256, packet_size_ - 16);
  for (int rounds = 0; rounds < 4096; ++rounds) {
    auto reply = request("qXfer:" + std::string(object) + ":read:" + std::string(annex) + ":" +
                         rsp::number(out.size()) + "," + rsp::number(chunk));
    if (!reply.ok()) return reply.status();
    if (reply->empty() || (*reply)[0] == 'E') {
      return absl::NotFoundError("the stub could not read " + std::string(object) + " '" + std::string(annex) + "' (" +
                                 *reply + ")");
    }
    out.append(*reply, 1);
    if ((*reply)[0] == 'l') return out;
    if ((*reply)[0] != 'm') return absl::InternalError("unexpected qXfer reply from the stub");
  }
  return absl::ResourceExhaustedError(std::string(object) + " is too large");
}

absl::Status session::refuse_if_running(std::string_view what) const {
  if (!running_) return absl::OkStatus();
  return absl::FailedPreconditionError("the target is running and a GDB stub answers " + std::string(what) +
                                       " only while it is stopped; break in first");
}

uint64_t session::capabilities() const {
  uint64_t caps = TOOLHOST_DT_CAP_READ_VIRTUAL | TOOLHOST_DT_CAP_WRITE_VIRTUAL | TOOLHOST_DT_CAP_REGISTERS |
                  TOOLHOST_DT_CAP_WRITE_REGISTERS | TOOLHOST_DT_CAP_SW_BREAKPOINTS | TOOLHOST_DT_CAP_HW_BREAKPOINTS |
                  TOOLHOST_DT_CAP_WATCHPOINTS | TOOLHOST_DT_CAP_RUN_CONTROL | TOOLHOST_DT_CAP_THREADS |
                  TOOLHOST_DT_CAP_OUTPUT;
  if (has_physical_) caps |= TOOLHOST_DT_CAP_READ_PHYSICAL | TOOLHOST_DT_CAP_WRITE_PHYSICAL;
  if (has_svr4_ || has_exec_file_) caps |= TOOLHOST_DT_CAP_MODULES;
  return caps;
}

std::string session::describe_json() const {
  std::string arch = description_.architecture;
  if (arch == "i386:x86-64") arch = "x86_64";
  std::string out = R"({"arch":)" + sdk::quote(arch) + R"(,"os":)" + (system_ ? "\"\"" : "\"linux\"") + R"(,"kind":)" +
                    (system_ ? "\"system\"" : "\"process\"") + R"(,"registers":[)";
  bool first = true;
  for (const auto& r : description_.registers) {
    if (r.offset + r.bits / 8 > g_bytes_) continue;  // outside the 'g' block
    if (!first) out += ',';
    first = false;
    out += R"({"name":)" + sdk::quote(r.name) + R"(,"bits":)" + std::to_string(r.bits) + R"(,"offset":)" +
           std::to_string(r.offset) + R"(,"role":)" + sdk::quote(r.role) + "}";
  }
  out += R"(],"hints":{)";
  std::string hints;
  if (!executable_.empty()) hints += R"("executable":)" + sdk::quote(executable_);
  if (pid_ >= 0) hints += std::string(hints.empty() ? "" : ",") + R"("pid":")" + std::to_string(pid_) + "\"";
  if (!attached_.empty()) hints += std::string(hints.empty() ? "" : ",") + R"("attached":")" + attached_ + "\"";
  out += hints + "}}";
  return out;
}

absl::Status session::set_general_thread(int64_t thread) {
  if (thread < 0 || thread == general_thread_) return absl::OkStatus();
  auto r = request("Hg" + thread_text(thread));
  if (!r.ok()) return r.status();
  if (*r != "OK") return absl::NotFoundError("no thread " + std::to_string(thread) + " on the target");
  general_thread_ = thread;
  return absl::OkStatus();
}

absl::StatusOr<size_t> session::read_chunks(uint64_t address, uint8_t* out, size_t size) {
  const size_t chunk = std::max<size_t>(16, (packet_size_ - 16) / 2);
  size_t done = 0;
  // With acks off the stub takes requests back to back; keep a window of them in flight.
  const size_t window = conn_.no_ack() ? 32 : 1;
  while (done < size) {
    std::string batch;
    std::vector<size_t> lengths;
    size_t planned = done;
    while (planned < size && lengths.size() < window) {
      const size_t n = std::min(chunk, size - planned);
      batch += rsp::frame("m" + rsp::number(address + planned) + "," + rsp::number(n));
      lengths.push_back(n);
      planned += n;
    }
    if (window == 1) {
      auto reply = request(std::string_view(batch).substr(1, batch.size() - 4));
      if (!reply.ok()) return reply.status();
      if (is_error_reply(*reply) || reply->empty()) return done;
      auto bytes = rsp::from_hex(*reply);
      if (!bytes) return absl::DataLossError("the stub sent malformed memory contents");
      const size_t got = std::min(bytes->size(), lengths[0]);
      std::memcpy(out + done, bytes->data(), got);
      done += got;
      if (got < lengths[0]) return done;
      continue;
    }
    if (auto s = conn_.send_many(batch); !s.ok()) return s;
    bool short_read = false;
    for (size_t n : lengths) {
      auto reply = conn_.receive(kRequestTimeout);  // every reply is read, even after a failure
      if (!reply.ok()) return reply.status();
      if (short_read) continue;
      if (is_error_reply(*reply) || reply->empty()) {
        short_read = true;
        continue;
      }
      auto bytes = rsp::from_hex(*reply);
      if (!bytes) return absl::DataLossError("the stub sent malformed memory contents");
      const size_t got = std::min(bytes->size(), n);
      std::memcpy(out + done, bytes->data(), got);
      done += got;
      if (got < n) short_read = true;
    }
    if (short_read) return done;
  }
  return done;
}

absl::StatusOr<size_t> session::read_memory(toolhost_dt_space_t space, uint64_t address, void* buffer, size_t size) {
  if (auto s = refuse_if_running("memory reads"); !s.ok()) return s;
  if (space == TOOLHOST_DT_PHYSICAL && !has_physical_) {
    return absl::UnimplementedError("this stub has no physical-memory mode (QEMU's Qqemu.PhyMemMode)");
  }
  if (space == TOOLHOST_DT_PHYSICAL) {
    if (auto r = request("Qqemu.PhyMemMode:1"); !r.ok() || *r != "OK") {
      return absl::InternalError("the stub refused physical-memory mode");
    }
  }
  auto* out = static_cast<uint8_t*>(buffer);
  size_t done = 0;
  absl::Status failure = absl::OkStatus();
  while (done < size) {
    auto got = read_chunks(address + done, out + done, size - done);
    if (!got.ok()) {
      failure = got.status();
      break;
    }
    done += *got;
    if (done >= size) break;
    // A stub such as QEMU fails a whole request that touches an unmapped page: retry the
    // rest of this page alone, and go on only if it reads.
    const uint64_t at = address + done;
    const size_t to_page = static_cast<size_t>(std::min<uint64_t>(kPage - (at % kPage), size - done));
    auto reply = request("m" + rsp::number(at) + "," + rsp::number(to_page));
    if (!reply.ok() || is_error_reply(*reply) || reply->empty()) break;
    auto bytes = rsp::from_hex(*reply);
    if (!bytes || bytes->empty()) break;
    const size_t n = std::min(bytes->size(), to_page);
    std::memcpy(out + done, bytes->data(), n);
    done += n;
    if (n < to_page) break;
  }
  if (space == TOOLHOST_DT_PHYSICAL) (void)request("Qqemu.PhyMemMode:0");
  if (!failure.ok()) return failure;
  return done;
}

absl::Status session::write_memory(toolhost_dt_space_t space, uint64_t address, const void* data, size_t size) {
  if (auto s = refuse_if_running("memory writes"); !s.ok()) return s;
  if (space == TOOLHOST_DT_PHYSICAL && !has_physical_) {
    return absl::UnimplementedError("this stub has no physical-memory mode (QEMU's Qqemu.PhyMemMode)");
  }
  if (space == TOOLHOST_DT_PHYSICAL) {
    if (auto r = request("Qqemu.PhyMemMode:1"); !r.ok() || *r != "OK") {
      return absl::InternalError("the stub refused physical-memory mode");
    }
  }
  const auto* in = static_cast<const uint8_t*>(data);
  const size_t chunk = std::max<size_t>(16, (packet_size_ - 32) / 2);
  absl::Status result = absl::OkStatus();
  for (size_t done = 0; done < size;) {
    const size_t n = std::min(chunk, size - done);
    auto reply = request("M" + rsp::number(address + done) + "," + rsp::number(n) + ":" + rsp::to_hex(in + done, n));
    if (!reply.ok()) {
      result = reply.status();
      break;
    }
    if (*reply != "OK") {
      result = absl::NotFoundError("cannot write memory at 0x" + rsp::number(address + done));
      break;
    }
    done += n;
  }
  if (space == TOOLHOST_DT_PHYSICAL) (void)request("Qqemu.PhyMemMode:0");
  return result;
}

namespace {
std::string z_packet(char op, toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) {
  int z = 0;
  uint32_t kind = 1;  // x86: the breakpoint instruction is one byte
  switch (type) {
    case TOOLHOST_DT_BP_SOFTWARE: z = 0; break;
    case TOOLHOST_DT_BP_HARDWARE: z = 1; break;
    case TOOLHOST_DT_BP_WRITE:
      z = 2;
      kind = length;
      break;
    case TOOLHOST_DT_BP_READ:
      z = 3;
      kind = length;
      break;
    default:
      z = 4;
      kind = length;
      break;
  }
  return std::string(1, op) + std::to_string(z) + "," + rsp::number(address) + "," + rsp::number(kind);
}
}  // namespace

absl::StatusOr<std::vector<uint8_t>> session::read_registers(int64_t thread) {
  if (auto s = refuse_if_running("register reads"); !s.ok()) return s;
  if (auto s = set_general_thread(thread); !s.ok()) return s;
  auto reply = request("g");
  if (!reply.ok()) return reply.status();
  if (is_error_reply(*reply)) return stub_error("reading registers", *reply);
  auto bytes = rsp::from_hex(*reply);
  if (!bytes) return absl::DataLossError("the stub sent a malformed register block");
  return std::move(*bytes);
}

absl::Status session::write_register(int64_t thread, uint32_t index, const void* value, size_t size) {
  if (auto s = refuse_if_running("register writes"); !s.ok()) return s;
  if (index >= description_.registers.size()) return absl::InvalidArgumentError("no register with that index");
  const auto& reg = description_.registers[index];
  if (size != reg.bits / 8)
    return absl::InvalidArgumentError(reg.name + " takes " + std::to_string(reg.bits / 8) + " bytes");
  if (auto s = set_general_thread(thread); !s.ok()) return s;
  auto reply = request("P" + rsp::number(reg.regnum) + "=" + rsp::to_hex(value, size));
  if (!reply.ok()) return reply.status();
  if (*reply == "OK") return absl::OkStatus();
  if (!reply->empty()) return stub_error("writing " + reg.name, *reply);
  // No P packet: read the block, patch it, write it back.
  auto block = read_registers(thread);
  if (!block.ok()) return block.status();
  if (reg.offset + size > block->size())
    return absl::UnimplementedError(reg.name + " cannot be written through this stub");
  std::memcpy(block->data() + reg.offset, value, size);
  auto g = request("G" + rsp::to_hex(block->data(), block->size()));
  if (!g.ok()) return g.status();
  return *g == "OK" ? absl::OkStatus() : stub_error("writing registers", *g);
}

absl::Status session::set_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) {
  if (auto s = refuse_if_running("breakpoint changes"); !s.ok()) return s;
  if (type >= TOOLHOST_DT_BP_WRITE && length != 1 && length != 2 && length != 4 && length != 8) {
    return absl::InvalidArgumentError("a watchpoint covers 1, 2, 4 or 8 bytes");
  }
  auto reply = request(z_packet('Z', type, address, length));
  if (!reply.ok()) return reply.status();
  if (*reply == "OK") {
    breakpoints_.insert({type, address, length});
    return absl::OkStatus();
  }
  if (reply->empty()) {
    static const char* const kWhat[] = {"software breakpoints", "hardware breakpoints", "write watchpoints",
                                        "read watchpoints", "access watchpoints"};
    return absl::UnimplementedError(std::string("the stub does not support ") + kWhat[std::clamp(type, 0, 4)]);
  }
  return absl::InternalError("the stub could not set a breakpoint at 0x" + rsp::number(address) + " (" + *reply + ")");
}

absl::Status session::clear_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) {
  if (auto s = refuse_if_running("breakpoint changes"); !s.ok()) return s;
  auto reply = request(z_packet('z', type, address, length));
  if (!reply.ok()) return reply.status();
  breakpoints_.erase({type, address, length});
  if (*reply == "OK") return absl::OkStatus();
  return stub_error("removing a breakpoint", *reply);
}

absl::StatusOr<uint64_t> session::current_pc() {
  auto regs = read_registers(-1);
  if (!regs.ok()) return regs.status();
  for (const auto& r : description_.registers) {
    if (static_cast<int>(r.regnum) == pc_regnum_ && r.offset + r.bits / 8 <= regs->size()) {
      uint64_t pc = 0;
      std::memcpy(&pc, regs->data() + r.offset, std::min<size_t>(8, r.bits / 8));
      return pc;
    }
  }
  return absl::UnimplementedError("the register map has no program counter");
}

absl::StatusOr<int> session::wire_signal(int signal) const {
  if (signal == 0) return 0;
  if (system_) {
    return absl::UnimplementedError("a whole machine (QEMU's system gdbstub) has no process to deliver " +
                                    signals::name_of(signal) + " to");
  }
  auto wire = signals::gdb_from_linux(signal);
  if (!wire) return absl::InvalidArgumentError("the GDB remote protocol has no number for " + signals::name_of(signal));
  return *wire;
}

std::string session::resume_packet(bool step, int64_t thread, int gdb_signal) {
  const char plain = step ? 's' : 'c';
  const char with_signal = step ? 'S' : 'C';
  std::string action = gdb_signal != 0 ? std::string(1, with_signal) + hex_byte(gdb_signal) : std::string(1, plain);
  if (has_vcont_ && (step ? has_vcont_step_ : true) && thread >= 0) {
    // The signal (or the step) goes to one thread; the others continue, as gdb resumes them.
    std::string packet = "vCont;" + action + ":" + thread_text(thread);
    if (!step) packet += ";c";
    return packet;
  }
  if (has_vcont_ && !step && thread < 0) return "vCont;" + action;
  return action;
}

absl::StatusOr<bool> session::step_over_breakpoint(int64_t thread, int signal) {
  // A stub may report a breakpoint at the pc again instead of executing the instruction
  // under it (gdbserver does for a plain step), so lift it for one step, as GDB does.
  if (breakpoints_.empty()) return false;
  auto pc = current_pc();
  if (!pc.ok()) return false;
  std::vector<std::tuple<int, uint64_t, uint32_t>> lifted;
  for (const auto& bp : breakpoints_) {
    const auto& [type, address, length] = bp;
    if (address == *pc && (type == TOOLHOST_DT_BP_SOFTWARE || type == TOOLHOST_DT_BP_HARDWARE)) lifted.push_back(bp);
  }
  if (lifted.empty()) return false;
  for (const auto& [type, address, length] : lifted) {
    auto r = request(z_packet('z', type, address, length));
    if (!r.ok()) return r.status();
  }
  // A signal to deliver goes with this step (the step then lands in its handler, if any).
  if (thread >= 0 && !(has_vcont_ && has_vcont_step_)) {
    if (auto r = request("Hc" + thread_text(thread)); !r.ok()) return r.status();
  }
  if (auto s = conn_.send(resume_packet(true, thread, signal)); !s.ok()) return s;
  running_ = true;
  last_was_step_ = true;
  toolhost_dt_stop_t stop{};
  absl::Status waited = wait_stop(milliseconds(5000), stop);
  for (const auto& [type, address, length] : lifted) {
    if (running_) break;
    (void)request(z_packet('Z', type, address, length));
  }
  if (!waited.ok()) return waited;
  pending_stop_ = stop;  // wait_stop consumed it; keep it for the caller to decide
  return true;
}

absl::Status session::resume(toolhost_dt_resume_t how, int64_t thread, int signal) {
  if (running_) return absl::FailedPreconditionError("the target is already running");
  auto wire = wire_signal(signal);
  if (!wire.ok()) return wire.status();
  pending_stop_.reset();
  interrupted_ = false;
  const int64_t step_thread = thread >= 0 ? thread : current_thread_;
  // A signal belongs to the thread that received it, whichever thread a step is for.
  const int64_t signal_thread = stopped_thread_ >= 0 ? stopped_thread_ : step_thread;
  const bool step = how == TOOLHOST_DT_STEP;
  auto stepped = step_over_breakpoint(*wire != 0 ? signal_thread : step_thread, *wire);
  if (!stepped.ok()) return stepped.status();
  if (*stepped) {
    // The step is done: it is the whole answer to a step, and a stop other than a plain step
    // (the process exited, a signal) is the answer to a continue as well.
    if (step || pending_stop_->reason != TOOLHOST_DT_STOP_STEP) return absl::OkStatus();
    pending_stop_.reset();
    *wire = 0;  // delivered with the step
  }
  const int64_t t = step ? (*wire != 0 ? signal_thread : step_thread) : (*wire != 0 ? signal_thread : -1);
  const bool per_thread = has_vcont_ && (!step || has_vcont_step_);
  if (!per_thread && t >= 0) {
    auto r = request("Hc" + thread_text(t));
    if (!r.ok()) return r.status();
  }
  const std::string packet = resume_packet(step, per_thread ? t : -1, *wire);
  last_was_step_ = step;
  if (auto s = conn_.send(packet); !s.ok()) return s;
  running_ = true;
  return absl::OkStatus();
}

absl::Status session::pass_signals(const std::vector<int>& list) {
  if (auto s = refuse_if_running("signal filters"); !s.ok()) return s;
  if (!has_pass_signals_) return absl::UnimplementedError("the stub has no QPassSignals");
  std::vector<int> wire;
  for (int signal : list) {
    if (auto w = signals::gdb_from_linux(signal)) wire.push_back(*w);
  }
  std::sort(wire.begin(), wire.end());
  std::string packet = "QPassSignals:";
  for (size_t i = 0; i < wire.size(); ++i) packet += (i ? ";" : "") + rsp::number(static_cast<uint64_t>(wire[i]));
  auto reply = request(packet);
  if (!reply.ok()) return reply.status();
  return *reply == "OK" ? absl::OkStatus() : stub_error("QPassSignals", *reply);
}

absl::StatusOr<std::string> session::siginfo() {
  if (auto s = refuse_if_running("siginfo reads"); !s.ok()) return s;
  if (!has_siginfo_) return absl::UnimplementedError("the stub does not offer qXfer:siginfo:read");
  if (!last_stop_was_signal_) return absl::NotFoundError("the last stop was not a signal");
  return read_xfer("siginfo", "");
}

absl::Status session::interrupt() {
  if (!running_) return absl::OkStatus();
  interrupted_ = true;
  return conn_.interrupt();
}

void session::record_stop(const stop_reply& reply) {
  toolhost_dt_stop_t stop{};
  stop.struct_size = sizeof(stop);
  if (reply.thread >= 0) {
    current_thread_ = reply.thread;
    general_thread_ = -2;  // the stub moved its general thread to the stopped one; re-select when needed
  }
  stopped_thread_ = current_thread_;
  stop.thread = current_thread_;
  // A process's signals cross the debug-target interface in Linux's numbering; a machine's
  // (QEMU) are only the debugger's own SIGTRAP and SIGINT, the same in both.
  const int signal = system_ ? reply.signal : signals::linux_from_gdb(reply.signal).value_or(reply.signal);
  stop.code = static_cast<uint64_t>(signal);
  std::string text = signals::name_of(signal);
  last_stop_was_signal_ = false;
  switch (reply.type) {
    case stop_reply::kind::exited:
      stop.reason = TOOLHOST_DT_STOP_EXITED;
      stop.code = static_cast<uint64_t>(reply.signal);
      text = "exited with status " + std::to_string(reply.signal);
      break;
    case stop_reply::kind::killed:
      stop.reason = TOOLHOST_DT_STOP_TERMINATED;
      text = "terminated by signal " + signals::name_of(signal) + " (" + std::to_string(signal) + ")";
      break;
    case stop_reply::kind::no_threads:
      stop.reason = TOOLHOST_DT_STOP_EXITED;
      text = "no threads left to run";
      break;
    case stop_reply::kind::signal:
      if (reply.watch != stop_reply::watch_kind::none) {
        stop.reason = TOOLHOST_DT_STOP_WATCHPOINT;
        stop.address = reply.watch_address;
        text = "watchpoint at 0x" + rsp::number(reply.watch_address);
      } else if (reply.swbreak || reply.hwbreak) {
        stop.reason = TOOLHOST_DT_STOP_BREAKPOINT;
      } else if (reply.signal == 5) {
        stop.reason = last_was_step_ ? TOOLHOST_DT_STOP_STEP : TOOLHOST_DT_STOP_BREAKPOINT;
      } else if ((reply.signal == 2 && (interrupted_ || system_)) || (interrupted_ && reply.signal == 0)) {
        stop.reason = TOOLHOST_DT_STOP_INTERRUPT;
      } else {
        // A signal on its way to the program (a SIGINT nobody here sent is one of them).
        stop.reason = TOOLHOST_DT_STOP_SIGNAL;
        last_stop_was_signal_ = true;
      }
      break;
  }
  std::snprintf(stop.description, sizeof(stop.description), "%s", text.c_str());
  running_ = false;
  if (reply.pc) {
    stop.pc = *reply.pc;
  } else if (reply.type == stop_reply::kind::signal && pc_regnum_ >= 0) {
    if (auto regs = read_registers(-1); regs.ok()) {
      for (const auto& r : description_.registers) {
        if (static_cast<int>(r.regnum) == pc_regnum_ && r.offset + 8 <= regs->size()) {
          std::memcpy(&stop.pc, regs->data() + r.offset, std::min<size_t>(8, r.bits / 8));
        }
      }
    }
  }
  pending_stop_ = stop;
}

absl::Status session::wait_stop(milliseconds timeout, toolhost_dt_stop_t& stop) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running_) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    auto packet = conn_.receive(std::max(left, milliseconds(0)));
    if (!packet.ok()) {
      if (absl::IsDeadlineExceeded(packet.status())) return absl::DeadlineExceededError("the target is running");
      return packet.status();
    }
    if (packet->size() > 1 && (*packet)[0] == 'O' && *packet != "OK") {
      if (auto text = rsp::from_hex(std::string_view(*packet).substr(1))) {
        std::lock_guard lock(output_mutex_);
        output_.append(text->begin(), text->end());
      }
      continue;
    }
    if (auto reply = parse_stop_reply(*packet, pc_regnum_)) record_stop(*reply);
  }
  if (!pending_stop_) return absl::FailedPreconditionError("the target is stopped and has no new stop to report");
  stop = *pending_stop_;
  pending_stop_.reset();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<thread_entry>> session::threads() {
  if (auto s = refuse_if_running("thread lists"); !s.ok()) return s;
  std::vector<thread_entry> out;
  auto reply = request("qfThreadInfo");
  for (int rounds = 0; reply.ok() && rounds < 10000; ++rounds) {
    if (reply->empty() || (*reply)[0] != 'm') break;
    std::string_view list = std::string_view(*reply).substr(1);
    while (!list.empty()) {
      const size_t comma = list.find(',');
      if (auto t = parse_thread_id(list.substr(0, comma))) out.push_back({*t, ""});
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    reply = request("qsThreadInfo");
  }
  if (!reply.ok()) return reply.status();
  for (auto& t : out) {
    if (auto extra = request("qThreadExtraInfo," + thread_text(t.id)); extra.ok() && !is_error_reply(*extra)) {
      if (auto text = rsp::from_hex(*extra)) t.name.assign(text->begin(), text->end());
    }
  }
  if (out.empty() && current_thread_ >= 0) out.push_back({current_thread_, ""});
  return out;
}

absl::Status session::select_thread(int64_t thread) {
  if (auto s = refuse_if_running("thread changes"); !s.ok()) return s;
  auto list = threads();
  if (!list.ok()) return list.status();
  const bool known = std::any_of(list->begin(), list->end(), [&](const auto& t) { return t.id == thread; });
  if (!known) return absl::NotFoundError("the target has no thread " + std::to_string(thread));
  if (auto s = set_general_thread(thread); !s.ok()) return s;
  current_thread_ = thread;
  return absl::OkStatus();
}

std::optional<module_entry> session::describe_elf(const std::string& path, uint64_t bias) const {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof(eh)) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256) {
    return std::nullopt;
  }
  uint64_t low = UINT64_MAX, high = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(eh.e_phoff + i * sizeof(ph)));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof(ph))) return std::nullopt;
    if (ph.p_type != PT_LOAD) continue;
    low = std::min(low, ph.p_vaddr & ~(kPage - 1));
    high = std::max(high, ph.p_vaddr + ph.p_memsz);
  }
  if (low == UINT64_MAX) return std::nullopt;
  return module_entry{basename(path), path, bias + low, high - low};
}

absl::StatusOr<std::vector<module_entry>> session::modules() {
  if (auto s = refuse_if_running("module lists"); !s.ok()) return s;
  std::vector<module_entry> out;
  if (!executable_.empty()) {
    // The executable's load bias: where the kernel says the entry point is, less the file's.
    uint64_t bias = 0;
    if (has_auxv_) {
      if (auto auxv = read_xfer("auxv", ""); auxv.ok()) {
        uint64_t entry = 0;
        for (size_t i = 0; i + 16 <= auxv->size(); i += 16) {
          uint64_t key = 0, value = 0;
          std::memcpy(&key, auxv->data() + i, 8);
          std::memcpy(&value, auxv->data() + i + 8, 8);
          if (key == AT_ENTRY) entry = value;
        }
        std::ifstream in(executable_, std::ios::binary);
        Elf64_Ehdr eh{};
        if (entry != 0 && in.read(reinterpret_cast<char*>(&eh), sizeof(eh))) bias = entry - eh.e_entry;
      }
    }
    if (auto m = describe_elf(executable_, bias)) out.push_back(*m);
  }
  if (has_svr4_) {
    auto xml = read_xfer("libraries-svr4", "");
    if (xml.ok()) {
      size_t pos = 0;
      while ((pos = xml->find("<library ", pos)) != std::string::npos) {
        const size_t end = xml->find('>', pos);
        std::string_view tag = std::string_view(*xml).substr(pos, end - pos + 1);
        const std::string name = xml_attribute(tag, "name");
        std::string l_addr_text = xml_attribute(tag, "l_addr");
        if (l_addr_text.starts_with("0x")) l_addr_text.erase(0, 2);
        const uint64_t l_addr = rsp::parse_number(l_addr_text).value_or(0);
        pos = end;
        if (name.empty()) continue;
        if (auto m = describe_elf(name, l_addr)) {
          out.push_back(*m);
        } else {
          out.push_back({basename(name), name, l_addr, 0});
        }
      }
    }
  }
  return out;
}

std::string session::take_output() {
  std::lock_guard lock(output_mutex_);
  return std::exchange(output_, {});
}

void session::shutdown() {
  if (running_) {
    (void)conn_.interrupt();
    toolhost_dt_stop_t stop{};
    (void)wait_stop(milliseconds(2000), stop);
  }
  if (!running_) {
    for (const auto& [type, address, length] : std::set(breakpoints_)) {
      (void)clear_breakpoint(type, address, length);
    }
    // Detach: the stub lets the process (or the machine) run on without us.
    (void)conn_.send("D");
    (void)conn_.receive(milliseconds(1000));
  }
  conn_.close();
}

}  // namespace toolhost::gdb
