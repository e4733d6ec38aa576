#include "kdnet_sim.hpp"

#include "kdcom_link.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <utility>

namespace kdnet_sim {
namespace {

using bytes = std::vector<uint8_t>;
using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---- Little-endian fields ---------------------------------------------------------------
void w16(bytes& b, size_t o, uint64_t v) {
  for (int i = 0; i < 2; ++i) b[o + i] = uint8_t(v >> (8 * i));
}
void w32(bytes& b, size_t o, uint64_t v) {
  for (int i = 0; i < 4; ++i) b[o + i] = uint8_t(v >> (8 * i));
}
void w64(bytes& b, size_t o, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[o + i] = uint8_t(v >> (8 * i));
}
uint64_t rd(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = v << 8 | p[i];
  return v;
}
uint64_t r16(const bytes& b, size_t o) { return o + 2 <= b.size() ? rd(&b[o], 2) : 0; }
uint64_t r32(const bytes& b, size_t o) { return o + 4 <= b.size() ? rd(&b[o], 4) : 0; }
uint64_t r64(const bytes& b, size_t o) { return o + 8 <= b.size() ? rd(&b[o], 8) : 0; }

// ---- KDNET, target side -------------------------------------------------------------------
// Datagram: "MDBG", version, channel | AES-256-CBC( BE64(seq<<8 | dir | pad), payload, zeros )
// | HMAC-SHA256(~control key, all plaintext before it)[0..16], which is also the IV.
constexpr uint8_t kVersion = 2;
constexpr uint8_t kChanData = 0;
constexpr uint8_t kChanControl = 1;

struct wire_keys {
  std::array<uint8_t, 32> control{};
  std::array<uint8_t, 32> mac{};
  std::array<uint8_t, 32> data{};
  bool keyed = false;
};

bool key_from_text(const std::string& text, std::array<uint8_t, 32>& out) {
  size_t start = 0;
  for (int part = 0; part < 4; ++part) {
    const size_t dot = text.find('.', start);
    if ((part < 3) != (dot != std::string::npos)) return false;
    const std::string piece = text.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (piece.empty()) return false;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(piece.c_str(), &end, 36);
    if (errno != 0 || *end != '\0') return false;
    for (int i = 0; i < 8; ++i) out[part * 8 + i] = uint8_t(v >> (8 * i));
    start = dot + 1;
  }
  return true;
}

bool cbc(bool encrypt, const uint8_t* key, const uint8_t* iv, uint8_t* buf, size_t n) {
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  int len = 0;
  bool ok = c && EVP_CipherInit_ex(c, EVP_aes_256_cbc(), nullptr, key, iv, encrypt) == 1 &&
            EVP_CIPHER_CTX_set_padding(c, 0) == 1 && EVP_CipherUpdate(c, buf, &len, buf, int(n)) == 1 &&
            size_t(len) == n;
  EVP_CIPHER_CTX_free(c);
  return ok;
}

bytes seal(const wire_keys& k, uint8_t chan, uint64_t seq, const bytes& payload) {
  const size_t used = 8 + payload.size();
  const size_t pad = (16 - used % 16) % 16;
  bytes out = {'M', 'D', 'B', 'G', kVersion, chan};
  const uint64_t meta = seq << 8 | pad;  // direction bit clear: from the target
  for (int i = 7; i >= 0; --i) out.push_back(uint8_t(meta >> (8 * i)));
  out.insert(out.end(), payload.begin(), payload.end());
  out.resize(out.size() + pad, 0);
  unsigned char mac[32];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), k.mac.data(), 32, out.data(), out.size(), mac, &mac_len);
  cbc(true, chan == kChanControl ? k.control.data() : k.data.data(), mac, out.data() + 6, out.size() - 6);
  out.insert(out.end(), mac, mac + 16);
  return out;
}

struct opened {
  uint8_t chan = 0;
  uint64_t seq = 0;
  bool from_host = false;
  bytes payload;
};

std::optional<opened> unseal(const wire_keys& k, const uint8_t* p, size_t n) {
  if (n < 6 + 16 + 16 || (n - 22) % 16 != 0 || std::memcmp(p, "MDBG", 4) != 0 || p[5] > 1) return std::nullopt;
  const uint8_t chan = p[5];
  if (chan == kChanData && !k.keyed) return std::nullopt;
  bytes plain(p, p + n - 16);
  const uint8_t* tag = p + n - 16;
  if (!cbc(false, chan == kChanControl ? k.control.data() : k.data.data(), tag, plain.data() + 6, plain.size() - 6)) {
    return std::nullopt;
  }
  unsigned char mac[32];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), k.mac.data(), 32, plain.data(), plain.size(), mac, &mac_len);
  if (CRYPTO_memcmp(mac, tag, 16) != 0) return std::nullopt;
  uint64_t meta = 0;
  for (int i = 0; i < 8; ++i) meta = meta << 8 | plain[6 + i];
  const size_t pad = meta & 0xF;
  if (plain.size() < 14 + pad) return std::nullopt;
  opened o;
  o.chan = chan;
  o.seq = meta >> 8;
  o.from_host = (meta & 0x80) != 0;
  o.payload.assign(plain.begin() + 14, plain.end() - pad);
  return o;
}

// ---- KD, target side (windbgkd.h) ---------------------------------------------------------
constexpr uint32_t kLeaderData = 0x30303030, kLeaderControl = 0x69696969;
constexpr uint16_t kPtManipulate = 2, kPtDebugIo = 3, kPtAck = 4, kPtResend = 5, kPtReset = 6, kPtStateChange = 7;
constexpr uint32_t kFirstTargetId = 0x80800000;
constexpr size_t kMaxKdPayload = 4000;
constexpr uint32_t kOk = 0, kUnsuccessful = 0xC0000001;

// AMD64 CONTEXT offsets.
constexpr size_t kCtxSize = 0x4D0, kCtxFlags = 0x30, kCtxCs = 0x38, kCtxSs = 0x42, kCtxEflags = 0x44, kCtxDr7 = 0x70,
                 kCtxRax = 0x78, kCtxRcx = 0x80, kCtxRsp = 0x98, kCtxRip = 0xF8;
// KSPECIAL_REGISTERS offsets.
constexpr size_t kKsSize = 0xE0, kKsCr0 = 0, kKsCr3 = 0x10, kKsCr4 = 0x18, kKsDr7 = 0x48;

}  // namespace

struct simulator::state {
  options opt;
  mutable std::mutex m;
  int fd = -1;
  sockaddr_in host{};
  std::mt19937 rng;
  counters c;

  // Wire.
  wire_keys keys;
  std::array<uint8_t, 32> client_key{};
  uint64_t my_seq = 1;
  uint64_t host_seq_mark = 0;
  steady::time_point next_poke{};

  // KD packets.
  uint32_t next_id = kFirstTargetId;
  std::optional<uint32_t> last_host_id;
  struct flight {
    uint16_t type;
    bytes payload;
    uint32_t id;
    steady::time_point sent;
    int tries;
  };
  std::optional<flight> in_flight;
  std::deque<std::pair<uint16_t, bytes>> outbox;

  // Machine: two processors; CPU 0 runs the loop, CPU 1 idles.
  struct processor {
    bytes ctx;
    bytes kspecial;
    bytes set_context_staging;
  };
  bytes ram;
  std::vector<processor> cpus;
  int current = 0;                        // the processor that reported the state
  std::map<uint32_t, uint64_t> bp_table;  // handle -> address
  bool halted = false;
  bool trace = false;
  bool boot_report_pending = false;
  uint64_t hw_hit_mask = 0;  // Dr6 B0-B3 of the stop being reported
  bytes last_state_change;   // what a RESEND while halted sends again
  enum class injection { none, same, processor } inject = injection::none;
  int inject_cpu = 0;
  steady::time_point next_dbgprint{};
  uint64_t ticks = 0;

  // With options.kd_target: the KDCOM target whose packets are carried instead of the machine's.
  std::unique_ptr<kdcom_link> relay;
  bool relay_expects_sync = true;  // its first packet after a (re)connection or our RESET has SYNC

  bytes& ctx() { return cpus[size_t(current)].ctx; }
  bytes& kspecial() { return cpus[size_t(current)].kspecial; }

  // ---- machine --------------------------------------------------------------------------
  void boot() {
    ram.assign(32u << 20, 0);
    auto put = [&](uint64_t pa, uint64_t v) {
      bytes tmp(8);
      w64(tmp, 0, v);
      std::memcpy(&ram[pa], tmp.data(), 8);
    };
    // PML4 @0x1000 -> PDPT @0x2000 -> PD @0x3000: eight 2 MiB pages, then one 4 KiB table.
    const uint64_t k = kKernelBase;
    put(kCr3 + ((k >> 39) & 0x1FF) * 8, 0x2000 | 0x3);
    put(0x2000 + ((k >> 30) & 0x1FF) * 8, 0x3000 | 0x3);
    for (uint64_t i = 0; i < 8; ++i) put(0x3000 + i * 8, (kKernelPhysical + i * 0x200000) | 0x83);
    put(0x3000 + 8 * 8, 0x4000 | 0x3);
    for (uint64_t i = 0; i < 512; ++i) put(0x4000 + i * 8, (0x1400000 + i * 0x1000) | 0x3);
    const uint64_t kp = kKernelPhysical;
    ram[kp] = 'M';
    ram[kp + 1] = 'Z';
    const uint8_t code[] = {0x90, 0x48, 0xFF, 0xC0, 0x90, 0xEB, 0xF9};
    std::memcpy(&ram[kp + 0x1000], code, sizeof(code));
    for (int i = 0; i < 64; ++i) ram[kp + 0x3000 + i] = uint8_t(i * 3 + 7);
    put(kp + 0x4000, k + 0x4000);  // PsLoadedModuleList: an empty list
    put(kp + 0x4008, k + 0x4000);
    const uint8_t idle[] = {0xF3, 0x90, 0xEB, 0xFC};  // pause; jmp back
    std::memcpy(&ram[kp + (kIdleLoop - k)], idle, sizeof(idle));
    const uint8_t break_with_status[] = {0xCC, 0xC3};  // int3; ret
    std::memcpy(&ram[kp + (kBreakWithStatus - k)], break_with_status, sizeof(break_with_status));
    cpus.assign(2, processor{});
    for (size_t i = 0; i < cpus.size(); ++i) {
      bytes& c = cpus[i].ctx;
      c.assign(kCtxSize, 0);
      w32(c, kCtxFlags, 0x10001F);
      w16(c, kCtxCs, 0x10);
      w16(c, kCtxSs, 0x18);
      w32(c, kCtxEflags, 0x202);
      w64(c, kCtxRsp, k + 0x8000 - i * 0x1000);
      w64(c, kCtxRip, i == 0 ? kCodeStart : kIdleLoop);
      bytes& ks = cpus[i].kspecial;
      ks.assign(kKsSize, 0);
      w64(ks, kKsCr0, 0x80050033);
      w64(ks, kKsCr3, kCr3);
      w64(ks, kKsCr4, 0x350EF8);
    }
    current = 0;
    bp_table.clear();
  }

  std::optional<uint64_t> translate(uint64_t va) const {
    auto entry = [&](uint64_t pa) -> uint64_t { return pa + 8 <= ram.size() ? rd(&ram[pa], 8) : 0; };
    uint64_t e = entry((r64(cpus[size_t(current)].kspecial, kKsCr3) & ~0xFFFull) + ((va >> 39) & 0x1FF) * 8);
    if (!(e & 1)) return std::nullopt;
    e = entry((e & 0xFFFFFFFFF000ull) + ((va >> 30) & 0x1FF) * 8);
    if (!(e & 1)) return std::nullopt;
    if (e & 0x80) return (e & 0xFFFFC0000000ull) + (va & 0x3FFFFFFF);
    e = entry((e & 0xFFFFFFFFF000ull) + ((va >> 21) & 0x1FF) * 8);
    if (!(e & 1)) return std::nullopt;
    if (e & 0x80) return (e & 0xFFFFFFE00000ull) + (va & 0x1FFFFF);
    e = entry((e & 0xFFFFFFFFF000ull) + ((va >> 12) & 0x1FF) * 8);
    if (!(e & 1)) return std::nullopt;
    const uint64_t pa = (e & 0xFFFFFFFFF000ull) + (va & 0xFFF);
    return pa < ram.size() ? std::optional<uint64_t>(pa) : std::nullopt;
  }

  // Copies byte by byte through the page tables (or physically); returns the prefix done.
  size_t access(bool physical, bool write, uint64_t address, uint8_t* buf, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      std::optional<uint64_t> pa = physical ? std::optional<uint64_t>(address + i) : translate(address + i);
      if (!pa || *pa >= ram.size()) return i;
      if (write) {
        ram[*pa] = buf[i];
      } else {
        buf[i] = ram[*pa];
      }
    }
    return n;
  }

  // Executes one instruction of the tiny ISA on the current processor: nop, pause, inc rax,
  // jmp rel8, ret, and int3, which traps without moving rip (the kernel backs rip up to the int3
  // before it reports). Returns false at an int3.
  bool execute_one() {
    bytes& c = ctx();
    const uint64_t rip = r64(c, kCtxRip);
    uint8_t ins[3] = {0, 0, 0};
    access(false, false, rip, ins, 3);
    uint64_t next = rip + 1;
    if (ins[0] == 0xCC) return false;
    if (ins[0] == 0x48 && ins[1] == 0xFF && ins[2] == 0xC0) {
      w64(c, kCtxRax, r64(c, kCtxRax) + 1);
      next = rip + 3;
    } else if (ins[0] == 0xF3 && ins[1] == 0x90) {
      next = rip + 2;
    } else if (ins[0] == 0xEB) {
      next = rip + 2 + int64_t(int8_t(ins[1]));
    } else if (ins[0] == 0xC3) {
      uint8_t to[8] = {};
      const uint64_t sp = r64(c, kCtxRsp);
      access(false, false, sp, to, 8);
      w64(c, kCtxRsp, sp + 8);
      next = rd(to, 8);
    }
    w64(c, kCtxRip, next);
    return true;
  }

  // The processor calls DbgBreakPointWithStatus(status) and traps on its int3, as the kernel
  // does for its initial break and for a break-in (DBG_STATUS_CONTROL_C, 1).
  void break_with_status(int cpu, uint64_t status) {
    current = cpu;
    bytes& c = ctx();
    uint8_t ret[8];
    for (int i = 0; i < 8; ++i) ret[i] = uint8_t(r64(c, kCtxRip) >> (8 * i));
    const uint64_t sp = r64(c, kCtxRsp) - 8;
    access(false, true, sp, ret, 8);
    w64(c, kCtxRsp, sp);
    w64(c, kCtxRcx, status);
    w64(c, kCtxRip, kBreakWithStatus);
    halt(0x80000003);
  }

  // ---- wire -------------------------------------------------------------------------------
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < p; }

  void transmit(bytes datagram) {
    if (chance(opt.drop)) {
      ++c.dropped;
      return;
    }
    if (chance(opt.corrupt)) {
      const size_t bit = std::uniform_int_distribution<size_t>(6 * 8, datagram.size() * 8 - 1)(rng);
      datagram[bit / 8] ^= uint8_t(1u << (bit % 8));
      ++c.corrupted;
    }
    ++c.datagrams_out;
    sendto(fd, datagram.data(), datagram.size(), 0, reinterpret_cast<const sockaddr*>(&host), sizeof(host));
  }

  void poke() {
    bytes body(344, 0);
    body[0] = 1;
    body[1] = 1;
    std::memcpy(&body[2], client_key.data(), 32);
    const uint16_t port = keys.keyed ? opt.port : 0;  // a data channel exists once keyed
    body[86] = uint8_t(port >> 8);
    body[87] = uint8_t(port);
    ++c.pokes;
    transmit(seal(keys, kChanControl, my_seq++, body));
  }

  void on_control(const opened& o) {
    if (o.payload.empty()) {  // the host asks us to poke
      poke();
      return;
    }
    if (o.payload.size() < 66 || o.payload[0] != 1 || o.payload[1] != 2) return;
    if (std::memcmp(&o.payload[2], client_key.data(), 32) != 0) return;
    // data key = SHA-256(control key | reply body)
    bytes material(keys.control.begin(), keys.control.end());
    material.insert(material.end(), o.payload.begin(), o.payload.end());
    SHA256(material.data(), material.size(), keys.data.data());
    keys.keyed = true;
    host_seq_mark = 0;
    ++c.handshakes;
  }

  // ---- KD packets -------------------------------------------------------------------------
  bytes kd_packet(uint32_t leader, uint16_t type, uint32_t id, const bytes& payload) {
    bytes p(16 + payload.size(), 0);
    uint32_t sum = 0;
    for (uint8_t b : payload) sum += b;
    w32(p, 0, leader);
    w16(p, 4, type);
    w16(p, 6, payload.size());
    w32(p, 8, id);
    w32(p, 12, leader == kLeaderData ? sum : 0);
    std::copy(payload.begin(), payload.end(), p.begin() + 16);
    return p;
  }
  void send_kd(const bytes& kd) { transmit(seal(keys, kChanData, my_seq++, kd)); }
  void send_control(uint16_t type, uint32_t id) { send_kd(kd_packet(kLeaderControl, type, id, {})); }
  void queue(uint16_t type, bytes payload) { outbox.emplace_back(type, std::move(payload)); }

  void pump_outbox(steady::time_point now) {
    if (!keys.keyed) return;
    if (in_flight && now - in_flight->sent > milliseconds(opt.retransmit_ms)) {
      // A state change is sent until the debugger takes it (kddll's KdSendPacket never gives
      // up on an exception report); other packets give up after a while.
      if (++in_flight->tries > 60 && in_flight->type != kPtStateChange) {
        in_flight.reset();
      } else {
        ++c.retransmits;
        in_flight->sent = now;
        send_kd(kd_packet(kLeaderData, in_flight->type, in_flight->id, in_flight->payload));
      }
    }
    if (!in_flight && !outbox.empty()) {
      auto [type, payload] = std::move(outbox.front());
      outbox.pop_front();
      in_flight = flight{type, std::move(payload), next_id++, now, 0};
      send_kd(kd_packet(kLeaderData, in_flight->type, in_flight->id, in_flight->payload));
    }
  }

  bytes state_change(uint32_t new_state, uint32_t code) {
    bytes s(240, 0);
    const bytes& c = ctx();
    const uint64_t rip = r64(c, kCtxRip);
    w32(s, 0, new_state);
    w16(s, 6, uint16_t(current));                                    // Processor
    w32(s, 8, uint32_t(cpus.size()));                                // NumberProcessors
    w64(s, 16, 0xFFFFD00000001000ull + uint64_t(current) * 0x1000);  // Thread
    w64(s, 24, rip);                                                 // ProgramCounter
    if (new_state == 0x3030) {
      w32(s, 32, code);     // ExceptionCode
      w64(s, 48, rip);      // ExceptionAddress
      w32(s, 32 + 152, 1);  // FirstChance
    }
    // Dr6: BS for a trace step, B0-B3 for a debug-register hit, else only the reserved ones.
    w64(s, 192, 0xFFFF0FF0 | (code == 0x80000004 ? (hw_hit_mask != 0 ? hw_hit_mask : 0x4000) : 0));
    hw_hit_mask = 0;
    w64(s, 200, r64(kspecial(), kKsDr7));
    w32(s, 208, r32(c, kCtxEflags));
    w16(s, 212, 16);  // InstructionCount
    // As Windows does (KdpSetCommonState), drop the table's breakpoints inside the reported
    // instruction stream; the debugger writes them again before it resumes.
    std::erase_if(bp_table, [&](const auto& entry) { return entry.second >= rip && entry.second < rip + 16; });
    uint8_t stream[16] = {};
    access(false, false, rip, stream, 16);
    std::memcpy(&s[216], stream, 16);
    w16(s, 232, 0x10);
    return s;
  }

  void halt(uint32_t code) {
    halted = true;
    trace = false;
    last_state_change = state_change(0x3030, code);
    queue(kPtStateChange, last_state_change);
  }

  void report_boot() {
    // Windows reports the kernel image's symbols at boot and waits for the debugger.
    halted = true;
    const std::string path = "\\SystemRoot\\system32\\ntoskrnl.exe";
    bytes s = state_change(0x3031, 0);
    w32(s, 32, path.size() + 1);  // PathNameLength
    w64(s, 40, kKernelBase);      // BaseOfDll
    w32(s, 60, 0x800000);         // SizeOfImage
    s.insert(s.end(), path.begin(), path.end());
    s.push_back(0);
    last_state_change = s;
    queue(kPtStateChange, std::move(s));
  }

  void dbgprint(const std::string& text) {
    if (!keys.keyed) return;  // nobody to print to: lost, as on a kernel whose debugger is not there
    bytes p(16 + text.size(), 0);
    w32(p, 0, 0x3230);  // PrintString
    w32(p, 8, text.size());
    std::memcpy(&p[16], text.data(), text.size());
    ++c.dbgprints;
    queue(kPtDebugIo, std::move(p));
  }

  void reboot_now() {
    boot();
    restart_transport();
    boot_report_pending = true;
    ++c.boots;
  }

  // What a new boot does to the KDNET side: a new client key and poke, sequences and ids afresh.
  void restart_transport() {
    keys.keyed = false;
    RAND_bytes(client_key.data(), 32);
    my_seq = 1;
    host_seq_mark = 0;
    next_id = kFirstTargetId;
    last_host_id.reset();
    in_flight.reset();
    outbox.clear();
    halted = false;
    trace = false;
    inject = injection::none;
    next_poke = steady::now();
  }

  void on_data(const opened& o) {
    const bytes& p = o.payload;
    if (p.size() == 1 && p[0] == 0x62) {  // break-in: the clock interrupt calls DbgBreakPointWithStatus
      if (relay) {
        relay->break_in();
      } else if (!halted) {
        break_with_status(0, 1);
      }
      return;
    }
    if (p.size() < 16) return;
    const uint32_t leader = uint32_t(r32(p, 0));
    const uint16_t type = uint16_t(r16(p, 4));
    const uint32_t id = uint32_t(r32(p, 8));
    if (leader == kLeaderControl) {
      if (type == kPtAck && in_flight && id == in_flight->id) in_flight.reset();
      if (type == kPtResend && in_flight) {
        in_flight->sent = steady::time_point{};  // resend at once
      } else if (type == kPtResend && relay && outbox.empty()) {
        relay->send_control(kPtResend);  // a halted target reports its state change again
      } else if (type == kPtResend && halted && outbox.empty()) {
        queue(kPtStateChange, last_state_change);  // waiting for a request: the state change again
      }
      if (type == kPtReset) {
        next_id = kFirstTargetId;
        last_host_id.reset();
        in_flight.reset();
        outbox.clear();
        send_control(kPtReset, 0);
        if (relay) {
          relay_expects_sync = true;
          relay->send_control(kPtReset);  // its ids restart too; halted, it reports again
        } else if (halted) {
          queue(kPtStateChange, last_state_change);
        }
      }
      return;
    }
    if (leader != kLeaderData) return;
    const size_t length = r16(p, 6);
    uint32_t sum = 0;
    for (size_t i = 16; i < p.size(); ++i) sum += p[i];
    if (length != p.size() - 16 || sum != r32(p, 12)) {
      send_control(kPtResend, 0);
      return;
    }
    send_control(kPtAck, id);
    if (last_host_id && id == *last_host_id) {
      ++c.duplicate_requests;  // our ACK was lost; never execute a request twice
      return;
    }
    last_host_id = id;
    if (relay) {
      if (type == kPtManipulate && r32(p, 16) == 0x313C) halted = false;  // Continue2: no reply
      ++c.relayed_requests;
      relay->send(type, bytes(p.begin() + 16, p.end()));
      return;
    }
    if (type != kPtManipulate || !halted) return;
    if (inject != injection::none) {
      // The request is dropped and a state change reported instead, as a kernel whose receive
      // loop restarted does (KdpSendWaitContinue sends its state change again).
      const injection what = std::exchange(inject, injection::none);
      ++c.injected;
      if (what == injection::same) {
        queue(kPtStateChange, last_state_change);
      } else {
        break_with_status(inject_cpu, 1);
      }
      return;
    }
    manipulate(bytes(p.begin() + 16, p.end()));
  }

  void manipulate(const bytes& req) {
    if (req.size() < 56) return;
    const uint32_t api = uint32_t(r32(req, 0));
    bytes reply(req.begin(), req.begin() + 56);
    const bytes data(req.begin() + 56, req.end());
    uint32_t status = kOk;
    bytes out;
    constexpr size_t u = 16;
    const size_t cpu = size_t(r16(req, 6));
    if (cpu >= cpus.size()) {
      w32(reply, 8, kUnsuccessful);
      queue(kPtManipulate, std::move(reply));
      return;
    }
    processor& pr = cpus[cpu];
    switch (api) {
      case 0x3130:    // ReadVirtualMemory
      case 0x313D: {  // ReadPhysicalMemory
        const size_t want = std::min<size_t>(r32(req, u + 8), kMaxKdPayload - 56);
        out.resize(want);
        const size_t got = access(api == 0x313D, false, r64(req, u), out.data(), want);
        out.resize(got);
        w32(reply, u + 12, got);
        if (got == 0) status = kUnsuccessful;
        break;
      }
      case 0x3131:    // WriteVirtualMemory
      case 0x313E: {  // WritePhysicalMemory
        bytes copy = data;
        const size_t n = std::min<size_t>(r32(req, u + 8), copy.size());
        const size_t done = access(api == 0x313E, true, r64(req, u), copy.data(), n);
        w32(reply, u + 12, done);
        if (done < n) status = kUnsuccessful;
        break;
      }
      case 0x3132:  // GetContext
        out = pr.ctx;
        break;
      case 0x3160: {  // SetContextEx: Offset, ByteCount, BytesCopied = total; commit on the last chunk
        const size_t offset = r32(req, u), count = r32(req, u + 4), total = r32(req, u + 8);
        if (total > kCtxSize || offset + count > total || count > data.size()) {
          status = kUnsuccessful;
          break;
        }
        pr.set_context_staging.resize(total);
        std::copy_n(data.begin(), count, pr.set_context_staging.begin() + offset);
        if (offset + count == total) {
          std::memcpy(pr.ctx.data(), pr.set_context_staging.data(), total);
          pr.set_context_staging.clear();
        }
        break;
      }
      case 0x3137:    // ReadControlSpace
      case 0x3138: {  // WriteControlSpace
        const uint64_t space = r64(req, u);
        const size_t n = r32(req, u + 8);
        if (space != 2 || n > kKsSize) {
          status = kUnsuccessful;
          break;
        }
        if (api == 0x3137) {
          out.assign(pr.kspecial.begin(), pr.kspecial.begin() + n);
        } else {
          std::copy_n(data.begin(), std::min(n, data.size()), pr.kspecial.begin());
        }
        w32(reply, u + 12, n);
        break;
      }
      case 0x3134: {  // WriteBreakPoint: address @0, handle out @8
        const uint64_t address = r64(req, u);
        uint32_t handle = 0;
        for (uint32_t h = 1; h <= 32 && handle == 0; ++h) {
          if (!bp_table.count(h)) handle = h;
        }
        bool present = false;  // KdpAddBreakpoint refuses a second entry at one address
        for (const auto& [h, a] : bp_table) present = present || a == address;
        if (handle == 0 || present || !translate(address)) {
          status = kUnsuccessful;
          break;
        }
        bp_table[handle] = address;
        w32(reply, u + 8, handle);
        break;
      }
      case 0x3135:  // RestoreBreakPoint: handle @0
        if (bp_table.erase(uint32_t(r32(req, u))) == 0) status = kUnsuccessful;
        break;
      case 0x313C: {  // Continue2: status, TraceFlag, Dr7 (for every processor); no reply
        trace = r32(req, u + 4) != 0;
        for (processor& each : cpus) {
          w64(each.kspecial, kKsDr7, r64(req, u + 8));
          w64(each.ctx, kCtxDr7, r64(req, u + 8));
        }
        halted = false;
        next_dbgprint = steady::now() + milliseconds(opt.dbgprint_interval_ms);
        return;
      }
      case 0x3146:  // GetVersion
        w16(reply, u + 0, 0xF);
        w16(reply, u + 2, 19041);
        reply[u + 4] = 6;
        reply[u + 5] = 2;
        w16(reply, u + 6, 0x47);
        w16(reply, u + 8, 0x8664);
        reply[u + 10] = 12;
        reply[u + 11] = 3;
        reply[u + 12] = 0x33;
        w64(reply, u + 16, kKernelBase);
        w64(reply, u + 24, kKernelBase + 0x4000);
        w64(reply, u + 32, 0);
        break;
      case 0x3152:  // ReadMsr
        if (r32(req, u) == 0xC0000082) {
          w32(reply, u + 4, uint32_t(kCodeStart));
          w32(reply, u + 8, uint32_t(kCodeStart >> 32));
        } else {
          status = kUnsuccessful;
        }
        break;
      case 0x3150:  // SwitchProcessor: the processor asked for reports instead of a reply
        current = int(cpu);
        last_state_change = state_change(0x3030, 0x80000003);
        queue(kPtStateChange, last_state_change);
        return;
      case 0x313B:  // Reboot
        reboot_now();
        return;
      default: status = kUnsuccessful;
    }
    w32(reply, 8, status);
    reply.insert(reply.end(), out.begin(), out.end());
    queue(kPtManipulate, std::move(reply));
  }

  void receive_all() {
    uint8_t buf[65536];
    for (;;) {
      sockaddr_in from{};
      socklen_t from_len = sizeof(from);
      const ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n <= 0) return;
      ++c.datagrams_in;
      if (chance(opt.drop)) {
        ++c.dropped;
        continue;
      }
      if (chance(opt.corrupt)) {
        const size_t bit = std::uniform_int_distribution<size_t>(6 * 8, size_t(n) * 8 - 1)(rng);
        buf[bit / 8] ^= uint8_t(1u << (bit % 8));
        ++c.corrupted;
      }
      auto o = unseal(keys, buf, size_t(n));
      if (!o) {
        ++c.rejected;
        continue;
      }
      if (!o->from_host) continue;
      if (o->chan == kChanControl) {
        on_control(*o);
        continue;
      }
      if (o->seq <= host_seq_mark) {  // a repeated sequence: dropped, as Windows does
        ++c.repeated_sequences;
        continue;
      }
      host_seq_mark = o->seq;
      on_data(*o);
    }
  }

  // The KDCOM target's packets, into the KDNET outbox. A stream it restarts on its own (its
  // SYNC bit when we sent no RESET) is a reboot, after which Windows' kdnet keys a new session.
  void pump_relay() {
    for (kdcom_link::packet& p : relay->pump()) {
      if (p.sync && !relay_expects_sync) {
        restart_transport();
        ++c.transport_restarts;
      }
      if (p.sync) relay_expects_sync = false;
      if (p.type == kPtStateChange) halted = true;
      // Nobody to print to (as below), or a debugger that stopped reading: prints are lost.
      if (p.type == kPtDebugIo && (!keys.keyed || outbox.size() > 256)) continue;
      ++c.relayed_replies;
      queue(p.type, std::move(p.payload));
    }
  }

  void tick(steady::time_point now) {
    if (now >= next_poke) {
      poke();
      next_poke = now + milliseconds(opt.poke_interval_ms);
    }
    if (relay) {
      pump_relay();
      pump_outbox(now);
      return;
    }
    if (keys.keyed && boot_report_pending) {
      boot_report_pending = false;
      report_boot();
    }
    // The machine runs whether or not a debugger is there; only what it sends needs a key.
    const int stepping = current;
    for (int cpu = 0; cpu < int(cpus.size()) && !halted; ++cpu) {
      if (trace && cpu != stepping) continue;
      current = cpu;
      for (int i = 0; i < 64 && !halted; ++i) {
        const uint64_t rip = r64(ctx(), kCtxRip);
        bool at_bp = false;
        for (auto& [h, a] : bp_table) at_bp = at_bp || a == rip;
        if (at_bp) {
          ++c.breakpoint_hits;
          halt(0x80000003);
          break;
        }
        // Execute breakpoints in DR0-DR3 (enabled in Dr7, type 00) fault before the
        // instruction with #DB, which Windows reports as STATUS_SINGLE_STEP with Dr6.Bn set.
        const uint64_t dr7 = r64(kspecial(), kKsDr7);
        for (int n = 0; n < 4 && hw_hit_mask == 0; ++n) {
          const bool enabled = ((dr7 >> (2 * n)) & 3) != 0;
          const bool execute = ((dr7 >> (16 + 4 * n)) & 3) == 0;
          if (enabled && execute && r64(kspecial(), 0x20 + 8 * n) == rip) hw_hit_mask = 1u << n;
        }
        if (hw_hit_mask != 0) {
          ++c.breakpoint_hits;
          halt(0x80000004);
          break;
        }
        if (!execute_one()) {
          halt(0x80000003);  // an int3 in the code
          break;
        }
        if (trace) {
          halt(0x80000004);
          break;
        }
      }
    }
    if (!halted) current = stepping;
    if (!halted && now >= next_dbgprint) {
      dbgprint("kdnet-sim: tick " + std::to_string(++ticks) + " rax=" + std::to_string(r64(cpus[0].ctx, kCtxRax)) +
               "\n");
      next_dbgprint = now + milliseconds(opt.dbgprint_interval_ms);
    }
    pump_outbox(now);
  }
};

namespace {
wire_keys keys_from(const std::string& key, const std::vector<uint8_t>& data_key) {
  wire_keys k;
  key_from_text(key, k.control);
  for (int i = 0; i < 32; ++i) k.mac[i] = uint8_t(~k.control[i]);
  if (data_key.size() == 32) {
    std::memcpy(k.data.data(), data_key.data(), 32);
    k.keyed = true;
  }
  return k;
}
}  // namespace

std::vector<uint8_t> seal_as_target(const std::string& key, const std::vector<uint8_t>& data_key, uint8_t channel,
                                    uint64_t sequence, const std::vector<uint8_t>& payload) {
  return seal(keys_from(key, data_key), channel, sequence, payload);
}

std::vector<uint8_t> open_with(const std::string& key, const std::vector<uint8_t>& data_key,
                               const std::vector<uint8_t>& datagram) {
  auto o = unseal(keys_from(key, data_key), datagram.data(), datagram.size());
  return o ? o->payload : std::vector<uint8_t>{};
}

simulator::simulator(options o) : s_(std::make_unique<state>()) {
  s_->opt = std::move(o);
  s_->rng.seed(s_->opt.seed);
}

simulator::~simulator() { stop(); }

bool simulator::start(std::string* error) {
  state& s = *s_;
  if (!key_from_text(s.opt.key, s.keys.control)) {
    *error = "bad key " + s.opt.key;
    return false;
  }
  for (int i = 0; i < 32; ++i) s.keys.mac[i] = uint8_t(~s.keys.control[i]);
  s.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s.fd < 0 || bind(s.fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  s.host.sin_family = AF_INET;
  s.host.sin_port = htons(s.opt.port);
  if (inet_pton(AF_INET, s.opt.host.c_str(), &s.host.sin_addr) != 1) {
    *error = "bad host address " + s.opt.host;
    return false;
  }
  if (!s.opt.kd_target.empty()) {
    s.relay = std::make_unique<kdcom_link>();
    if (!s.relay->connect(s.opt.kd_target, error)) return false;
  }
  {
    std::lock_guard lock(s.m);
    s.reboot_now();
    s.boot_report_pending = false;  // the first boot happened long ago
    s.c.boots = 0;
    if (s.relay) {
      // The KDCOM target is wherever it is; it reports its own stops.
    } else if (s.opt.start == start_state::initial_break) {
      s.break_with_status(0, 1);
    } else if (s.opt.start == start_state::breakpoint) {
      // A debugger that went away left a breakpoint in the table; the loop reaches it at once.
      s.bp_table[1] = kIncRax;
      for (int i = 0; i < 16 && !s.halted; ++i) s.tick(steady::now());
    }
  }
  thread_ = std::thread([this] { run(); });
  return true;
}

void simulator::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (s_->fd >= 0) close(s_->fd);
  s_->fd = -1;
}

void simulator::run() {
  while (!stop_) {
    pollfd p[2] = {{s_->fd, POLLIN, 0}, {s_->relay ? s_->relay->fd() : -1, POLLIN, 0}};
    poll(p, 2, 1);
    std::lock_guard lock(s_->m);
    s_->receive_all();
    s_->tick(steady::now());
  }
}

void simulator::reboot() {
  std::lock_guard lock(s_->m);
  if (s_->relay) return;  // the KDCOM target's machine reboots through its own control channel
  s_->reboot_now();
}

void simulator::set_faults(double drop, double corrupt) {
  std::lock_guard lock(s_->m);
  s_->opt.drop = drop;
  s_->opt.corrupt = corrupt;
}

counters simulator::stats() const {
  std::lock_guard lock(s_->m);
  return s_->c;
}

bool simulator::keyed() const {
  std::lock_guard lock(s_->m);
  return s_->keys.keyed;
}

bool simulator::halted() const {
  std::lock_guard lock(s_->m);
  return s_->halted;
}

size_t simulator::breakpoints_in_table() const {
  std::lock_guard lock(s_->m);
  return s_->bp_table.size();
}

void simulator::inject(bool same, int processor) {
  std::lock_guard lock(s_->m);
  if (s_->relay) return;
  s_->inject = same ? state::injection::same : state::injection::processor;
  s_->inject_cpu = processor;
}

uint64_t simulator::rip(int processor) const {
  std::lock_guard lock(s_->m);
  return r64(s_->cpus[size_t(processor)].ctx, kCtxRip);
}

uint64_t simulator::rax() const {
  std::lock_guard lock(s_->m);
  return r64(s_->cpus[0].ctx, kCtxRax);
}

std::vector<uint8_t> simulator::read_physical(uint64_t address, size_t size) const {
  std::lock_guard lock(s_->m);
  std::vector<uint8_t> out(size);
  out.resize(s_->access(true, false, address, out.data(), size));
  return out;
}

}  // namespace kdnet_sim
