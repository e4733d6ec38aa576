#include "qemu_machine.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <regex>
#include <utility>

namespace kdsim {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kChunk = 1024;  // bytes per m/M packet (QEMU's packets hold 4096 characters)

std::string hex_of(const uint8_t* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

bool bytes_of_hex(const std::string& text, std::vector<uint8_t>& out) {
  if (text.size() % 2 != 0) return false;
  out.clear();
  for (size_t i = 0; i < text.size(); i += 2) {
    char* end = nullptr;
    const std::string two = text.substr(i, 2);
    const unsigned long v = std::strtoul(two.c_str(), &end, 16);
    if (end != two.c_str() + 2) return false;
    out.push_back(static_cast<uint8_t>(v));
  }
  return true;
}

std::string hex_number(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%" PRIx64, v);
  return b;
}

// The registers kd-sim maps into CONTEXT / KSPECIAL_REGISTERS / MSRs, by the target
// description's names. Others (x87, SSE) are left alone.
std::optional<uint64_t> get_register(const cpu_state& s, const std::string& n) {
  const CONTEXT& c = s.context;
  const KSPECIAL_REGISTERS& k = s.special;
  static const std::map<std::string, uint64_t CONTEXT::*> gprs = {
      {"rax", &CONTEXT::Rax}, {"rbx", &CONTEXT::Rbx}, {"rcx", &CONTEXT::Rcx}, {"rdx", &CONTEXT::Rdx},
      {"rsi", &CONTEXT::Rsi}, {"rdi", &CONTEXT::Rdi}, {"rbp", &CONTEXT::Rbp}, {"rsp", &CONTEXT::Rsp},
      {"r8", &CONTEXT::R8},   {"r9", &CONTEXT::R9},   {"r10", &CONTEXT::R10}, {"r11", &CONTEXT::R11},
      {"r12", &CONTEXT::R12}, {"r13", &CONTEXT::R13}, {"r14", &CONTEXT::R14}, {"r15", &CONTEXT::R15},
      {"rip", &CONTEXT::Rip}};
  static const std::map<std::string, uint16_t CONTEXT::*> segments = {{"cs", &CONTEXT::SegCs}, {"ss", &CONTEXT::SegSs},
                                                                      {"ds", &CONTEXT::SegDs}, {"es", &CONTEXT::SegEs},
                                                                      {"fs", &CONTEXT::SegFs}, {"gs", &CONTEXT::SegGs}};
  static const std::map<std::string, uint64_t KSPECIAL_REGISTERS::*> controls = {{"cr0", &KSPECIAL_REGISTERS::Cr0},
                                                                                 {"cr2", &KSPECIAL_REGISTERS::Cr2},
                                                                                 {"cr3", &KSPECIAL_REGISTERS::Cr3},
                                                                                 {"cr4", &KSPECIAL_REGISTERS::Cr4},
                                                                                 {"cr8", &KSPECIAL_REGISTERS::Cr8}};
  static const std::map<std::string, uint32_t> msrs = {
      {"fs_base", kMsrFsBase}, {"gs_base", kMsrGsBase}, {"k_gs_base", kMsrKernelGsBase}, {"efer", kMsrEfer}};
  if (auto it = gprs.find(n); it != gprs.end()) return c.*(it->second);
  if (auto it = segments.find(n); it != segments.end()) return c.*(it->second);
  if (auto it = controls.find(n); it != controls.end()) return k.*(it->second);
  if (n == "eflags") return c.EFlags;
  if (auto it = msrs.find(n); it != msrs.end()) {
    auto m = s.msrs.find(it->second);
    return m == s.msrs.end() ? 0 : m->second;
  }
  return std::nullopt;
}

void set_register(cpu_state& s, const std::string& n, uint64_t v) {
  CONTEXT& c = s.context;
  KSPECIAL_REGISTERS& k = s.special;
  uint64_t* wide[] = {&c.Rax, &c.Rbx, &c.Rcx, &c.Rdx, &c.Rsi, &c.Rdi, &c.Rbp, &c.Rsp, &c.R8,  &c.R9,  &c.R10,
                      &c.R11, &c.R12, &c.R13, &c.R14, &c.R15, &c.Rip, &k.Cr0, &k.Cr2, &k.Cr3, &k.Cr4, &k.Cr8};
  static const char* wide_names[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8",  "r9",  "r10",
                                     "r11", "r12", "r13", "r14", "r15", "rip", "cr0", "cr2", "cr3", "cr4", "cr8"};
  for (size_t i = 0; i < std::size(wide_names); ++i) {
    if (n == wide_names[i]) {
      *wide[i] = v;
      return;
    }
  }
  uint16_t* narrow[] = {&c.SegCs, &c.SegSs, &c.SegDs, &c.SegEs, &c.SegFs, &c.SegGs};
  static const char* narrow_names[] = {"cs", "ss", "ds", "es", "fs", "gs"};
  for (size_t i = 0; i < std::size(narrow_names); ++i) {
    if (n == narrow_names[i]) {
      *narrow[i] = static_cast<uint16_t>(v);
      return;
    }
  }
  if (n == "eflags") c.EFlags = static_cast<uint32_t>(v);
  if (n == "fs_base") s.msrs[kMsrFsBase] = k.MsrFsBase = v;
  if (n == "gs_base") s.msrs[kMsrGsBase] = k.MsrGsBase = v;
  if (n == "k_gs_base") s.msrs[kMsrKernelGsBase] = k.MsrGsSwap = v;
  if (n == "efer") s.msrs[kMsrEfer] = v;
}

// The target description (qXfer:features:read), its includes followed.
std::optional<std::string> read_feature(gdb_remote& link, const std::string& annex) {
  std::string text;
  for (int guard = 0; guard < 256; ++guard) {
    auto r = link.request("qXfer:features:read:" + annex + ":" + hex_number(text.size()) + ",800");
    if (!r || r->empty() || ((*r)[0] != 'm' && (*r)[0] != 'l')) return std::nullopt;
    text += r->substr(1);
    if ((*r)[0] == 'l') return text;
  }
  return std::nullopt;
}

void collect_registers(gdb_remote& link, const std::string& annex, std::vector<qemu_machine::register_slot>& out,
                       int depth) {
  auto xml = read_feature(link, annex);
  if (!xml || depth > 4) return;
  static const std::regex comment(R"(<!--[\s\S]*?-->)");  // QEMU comments out the descriptor bases
  xml = std::regex_replace(*xml, comment, "");
  static const std::regex element(R"(<(reg|xi:include)\s([^>]*)>)");
  static const std::regex attribute(R"re((\w+)="([^"]*)")re");
  for (std::sregex_iterator it(xml->begin(), xml->end(), element), end; it != end; ++it) {
    std::map<std::string, std::string> a;
    const std::string attrs = (*it)[2];
    for (std::sregex_iterator at(attrs.begin(), attrs.end(), attribute); at != end; ++at) a[(*at)[1]] = (*at)[2];
    if ((*it)[1] == "xi:include") {
      if (a.contains("href")) collect_registers(link, a["href"], out, depth + 1);
      continue;
    }
    qemu_machine::register_slot r;
    r.name = a["name"];
    r.number = a.contains("regnum") ? std::atoi(a["regnum"].c_str()) : (out.empty() ? 0 : out.back().number + 1);
    r.size = static_cast<size_t>(std::atoi(a["bitsize"].c_str())) / 8;
    r.offset = out.empty() ? 0 : out.back().offset + out.back().size;
    out.push_back(r);
  }
}

}  // namespace

std::unique_ptr<qemu_machine> qemu_machine::connect(const std::string& spec, std::string& error) {
  auto link = gdb_remote::connect(spec, error);
  if (!link) return nullptr;
  auto stop = link->request("?");  // QEMU stopped the VM for us: its stop reply
  if (!stop || stop->empty()) {
    error = "kd-sim: QEMU's gdbstub at " + spec + " did not answer '?'";
    return nullptr;
  }
  if (auto r = link->request("Qqemu.PhyMemMode:1"); !r || *r != "OK") {
    error = "kd-sim: QEMU's gdbstub at " + spec + " refused Qqemu.PhyMemMode:1 (physical memory access)";
    return nullptr;
  }
  std::vector<std::string> threads;
  for (auto r = link->request("qfThreadInfo"); r && !r->empty() && (*r)[0] == 'm'; r = link->request("qsThreadInfo")) {
    size_t at = 1;
    while (at < r->size()) {
      const size_t comma = r->find(',', at);
      threads.push_back(r->substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  }
  if (threads.empty()) {
    error = "kd-sim: QEMU's gdbstub at " + spec + " lists no vCPUs (qfThreadInfo)";
    return nullptr;
  }
  std::vector<register_slot> layout;
  collect_registers(*link, "target.xml", layout, 0);
  bool has_cr3 = false;
  for (const auto& r : layout) has_cr3 |= r.name == "cr3";
  if (!has_cr3) {
    error = "kd-sim: QEMU's gdbstub at " + spec + " describes no x86-64 cr3 register (is the VM qemu-system-x86_64?)";
    return nullptr;
  }
  std::unique_ptr<qemu_machine> m(new qemu_machine(std::move(*link), std::move(threads), std::move(layout)));
  if (!m->fetch_registers()) {
    error = "kd-sim: QEMU's gdbstub at " + spec + " did not return the registers";
    return nullptr;
  }
  return m;
}

qemu_machine::qemu_machine(gdb_remote link, std::vector<std::string> threads, std::vector<register_slot> layout)
    : machine(static_cast<int>(threads.size())),
      link_(std::move(link)),
      threads_(std::move(threads)),
      layout_(std::move(layout)),
      fetched_(threads_.size()) {
  for (cpu_state& c : cpus_) {
    c.context.ContextFlags = 0x0010001F;
    c.special.KernelDr6 = 0xFFFF0FF0;
    c.special.KernelDr7 = 0x400;
  }
}

bool qemu_machine::fetch_registers() {
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (auto r = link_.request("Hg" + threads_[i]); !r || *r != "OK") return false;
    auto g = link_.request("g");
    std::vector<uint8_t> bytes;
    if (!g || !bytes_of_hex(*g, bytes)) return false;
    for (const register_slot& r : layout_) {
      if (r.size == 0 || r.size > 8 || r.offset + r.size > bytes.size()) continue;
      uint64_t v = 0;
      std::memcpy(&v, bytes.data() + r.offset, r.size);
      set_register(cpus_[i], r.name, v);
    }
    cpus_[i].staged_context.clear();
    fetched_[i] = cpus_[i];
  }
  pages_.clear();
  return true;
}

void qemu_machine::store_registers() {
  for (size_t i = 0; i < threads_.size(); ++i) {
    bool selected = false;
    for (const register_slot& r : layout_) {
      const auto now = get_register(cpus_[i], r.name), then = get_register(fetched_[i], r.name);
      if (!now || *now == *then || r.size > 8) continue;
      if (!selected) link_.request("Hg" + threads_[i]);
      selected = true;
      const uint64_t v = *now;
      link_.request("P" + hex_number(static_cast<uint64_t>(r.number)) + "=" +
                    hex_of(reinterpret_cast<const uint8_t*>(&v), r.size));
    }
    fetched_[i] = cpus_[i];
  }
}

// DR0-DR3 as the kernel would load them from processor 0's KSPECIAL_REGISTERS (ContinueApi2
// gives every processor the same Dr7): execution as Z1, write watches as Z2, access as Z4.
void qemu_machine::sync_hardware_breakpoints() {
  const KSPECIAL_REGISTERS& s = cpus_[0].special;
  const uint64_t dr[] = {s.KernelDr0, s.KernelDr1, s.KernelDr2, s.KernelDr3};
  static constexpr uint32_t kLength[4] = {1, 2, 8, 4};
  std::vector<std::string> want;
  for (int n = 0; n < 4; ++n) {
    if (((s.KernelDr7 >> (2 * n)) & 3) == 0) continue;
    const uint64_t rw = (s.KernelDr7 >> (16 + 4 * n)) & 3;
    const uint32_t len = kLength[(s.KernelDr7 >> (18 + 4 * n)) & 3];
    if (rw == 2) continue;  // I/O
    const char* type = rw == 0 ? "1" : rw == 1 ? "2" : "4";
    want.push_back(std::string(type) + "," + hex_number(dr[n]) + "," + (rw == 0 ? "1" : hex_number(len)));
  }
  for (const std::string& h : hardware_) {
    if (std::find(want.begin(), want.end(), h) == want.end()) link_.request("z" + h);
  }
  for (const std::string& h : want) {
    if (std::find(hardware_.begin(), hardware_.end(), h) == hardware_.end()) link_.request("Z" + h);
  }
  hardware_ = want;
}

std::optional<std::vector<uint8_t>> qemu_machine::page(uint64_t frame) {
  if (auto it = pages_.find(frame); it != pages_.end()) return it->second;
  std::vector<uint8_t> bytes, chunk;
  for (uint32_t at = 0; at < 0x1000; at += kChunk) {
    auto r = link_.request("m" + hex_number(frame + at) + "," + hex_number(kChunk));
    if (!r || !bytes_of_hex(*r, chunk) || chunk.size() != kChunk) return std::nullopt;
    bytes.insert(bytes.end(), chunk.begin(), chunk.end());
  }
  if (pages_.size() > 4096) pages_.clear();  // bounded: 16 MiB per stop
  return pages_[frame] = std::move(bytes);
}

uint32_t qemu_machine::read_physical(uint64_t pa, uint8_t* out, uint32_t size) {
  if (running_) return 0;  // the gdbstub takes no requests while the VM runs
  uint32_t done = 0;
  while (done < size) {
    const uint64_t at = pa + done, frame = at & ~0xFFFull;
    auto bytes = page(frame);
    if (!bytes) break;
    const uint32_t n = std::min<uint32_t>(size - done, static_cast<uint32_t>(frame + 0x1000 - at));
    std::memcpy(out + done, bytes->data() + (at - frame), n);
    done += n;
  }
  // Our breakpoints read as the int3 Windows would have written there (KdpReadVirtualMemory
  // copies memory as it is).
  for (const auto& [va, where] : inserted_) {
    if (where >= pa && where < pa + done) out[where - pa] = 0xCC;
  }
  return done;
}

uint32_t qemu_machine::write_physical(uint64_t pa, const uint8_t* in, uint32_t size) {
  if (running_) return 0;
  uint32_t done = 0;
  while (done < size) {
    const uint32_t n = std::min(kChunk, size - done);
    auto r = link_.request("M" + hex_number(pa + done) + "," + hex_number(n) + ":" + hex_of(in + done, n));
    if (!r || *r != "OK") break;
    done += n;
  }
  pages_.clear();
  return done;
}

bool qemu_machine::insert_breakpoint(int cpu, uint64_t va) {
  auto pa = translate(cpu_cr3(cpu), va);
  if (!pa) return false;
  auto r = link_.request("Z0," + hex_number(va) + ",1");
  if (!r || *r != "OK") return false;
  inserted_[va] = *pa;
  return true;
}

void qemu_machine::remove_breakpoint(int, uint64_t va, uint8_t) {
  link_.request("z0," + hex_number(va) + ",1");
  inserted_.erase(va);
}

void qemu_machine::call_break_with_status(int cpu, uint64_t status) {
  break_in_ = interrupted{cpu, cpus_[static_cast<size_t>(cpu)].context};
  machine::call_break_with_status(cpu, status);
}

void qemu_machine::resume(bool trace, int cpu) {
  if (running_) return;
  running_ = true;
  stepping_ = trace;
  if (break_in_) {
    // A break-in was an interrupt that called DbgBreakPointWithStatus: once the debugger moved
    // past its int3 onto the ret, the routine returns and the interrupt restores what it
    // interrupted. (A step there ends on the interrupted instruction.)
    CONTEXT& c = cpus_[static_cast<size_t>(break_in_->cpu)].context;
    const bool returning = c.Rip == break_with_status_ + 1 && c.Rsp == break_in_->context.Rsp - 8;
    const int at = break_in_->cpu;
    if (returning) c = break_in_->context;
    if (returning || c.Rip != break_with_status_) break_in_.reset();
    if (returning && trace && cpu == at) {
      pending_ = cpu_event{cpu_event::kind::single_step, cpu, 0, true};
      return;
    }
  }
  // An int3 at rip (DbgBreakPointWithStatus not stepped past, or a breakpoint left in place)
  // traps again at once, as it would on Windows; QEMU's guest would take it through its IDT.
  for (int i = 0; i < cpu_count(); ++i) {
    if (trace && i != cpu) continue;
    uint8_t byte = 0;
    running_ = false;
    const bool int3 = read_virtual(i, cpus_[static_cast<size_t>(i)].context.Rip, &byte, 1) == 1 && byte == 0xCC;
    running_ = true;
    if (int3 && !inserted_.contains(cpus_[static_cast<size_t>(i)].context.Rip)) {
      pending_ = cpu_event{cpu_event::kind::breakpoint, i};
      return;
    }
  }
  store_registers();
  sync_hardware_breakpoints();
  pages_.clear();
  if (trace) {
    link_.request("Hc" + threads_[static_cast<size_t>(cpu)]);
    link_.send("s");
  } else {
    link_.send("c");
  }
}

// The "key:value;" fields of a stop reply.
static const std::regex& stop_field() {
  static const std::regex field(R"((\w+):([0-9a-fA-Fp.\-]+);)");
  return field;
}

// The processor a stop reply names (thread:ID), else processor 0.
int qemu_machine::cpu_of(const std::string& reply) const {
  for (std::sregex_iterator it(reply.begin(), reply.end(), stop_field()), end; it != end; ++it) {
    if ((*it)[1] != "thread") continue;
    for (size_t i = 0; i < threads_.size(); ++i) {
      if (threads_[i] == (*it)[2]) return static_cast<int>(i);
    }
  }
  return 0;
}

cpu_event qemu_machine::stop_from(const std::string& reply) {
  running_ = false;
  if (reply.empty() || reply[0] == 'W' || reply[0] == 'X') {
    return {cpu_event::kind::lost, 0, 0, false, "QEMU's VM exited (" + reply + ")"};
  }
  int signal = 0, cpu = 0;
  uint64_t watched = 0;
  bool watch = false;
  if (reply.size() >= 3 && (reply[0] == 'T' || reply[0] == 'S')) signal = std::stoi(reply.substr(1, 2), nullptr, 16);
  cpu = cpu_of(reply);
  for (std::sregex_iterator it(reply.begin(), reply.end(), stop_field()), end; it != end; ++it) {
    const std::string key = (*it)[1], value = (*it)[2];
    if (key == "watch" || key == "rwatch" || key == "awatch") {
      watch = true;
      watched = std::strtoull(value.c_str(), nullptr, 16);
    }
  }
  if (!fetch_registers()) return {cpu_event::kind::lost, cpu, 0, false, "QEMU's gdbstub stopped answering"};
  const KSPECIAL_REGISTERS& s = cpus_[static_cast<size_t>(cpu)].special;
  const uint64_t dr[] = {s.KernelDr0, s.KernelDr1, s.KernelDr2, s.KernelDr3};
  const uint64_t rip = cpus_[static_cast<size_t>(cpu)].context.Rip;
  uint32_t hits = 0;
  if (watch) {
    for (int n = 0; n < 4; ++n) {
      if (((s.KernelDr7 >> (2 * n)) & 3) != 0 && dr[n] == watched) hits |= 1u << n;
    }
  }
  if (signal == 2) {  // not asked for by halt(): someone interrupted the VM; report it as a break-in
    call_break_with_status(cpu, DBG_STATUS_CONTROL_C);
    return {cpu_event::kind::breakpoint, cpu};
  }
  if (stepping_) return {cpu_event::kind::single_step, cpu, hits, true};
  if (watch) return {cpu_event::kind::single_step, cpu, hits};
  if (inserted_.contains(rip)) return {cpu_event::kind::breakpoint, cpu};
  if (const uint32_t x = execute_hits(cpu, rip); x != 0) return {cpu_event::kind::single_step, cpu, x};
  return {cpu_event::kind::breakpoint, cpu};
}

cpu_event qemu_machine::run(bool, int, const std::function<bool(const std::string&)>&) {
  if (!running_) return {};
  if (pending_) {
    running_ = false;
    return *std::exchange(pending_, std::nullopt);
  }
  auto reply = link_.receive(0ms);
  if (!reply) {
    if (!link_.alive()) {
      running_ = false;
      return {cpu_event::kind::lost, 0, 0, false, "QEMU's gdbstub closed the connection (the VM exited?)"};
    }
    return {};
  }
  return stop_from(*reply);
}

// Whether a call from `rip` would unwind poorly: `rip` may be a function's first instruction
// (after a ret or the int3 padding between functions: the return address would name the function
// before it), or it lies outside every function of the image's .pdata (a leaf function, which
// only the top frame may be) or on a BeginAddress. The .pdata is read from memory, the image
// found by its MZ header at or below `rip`; without one only the first test applies. A wrong yes
// costs one more step.
bool qemu_machine::unwinds_poorly(int cpu, uint64_t rip) {
  uint8_t before = 0;
  if (read_virtual(cpu, rip - 1, &before, 1) == 1 && (before == 0xCC || before == 0xC3)) return true;
  auto read32 = [&](uint64_t va) {
    uint32_t v = 0;
    return read_virtual(cpu, va, reinterpret_cast<uint8_t*>(&v), 4) == 4 ? std::optional<uint32_t>(v) : std::nullopt;
  };
  uint64_t base = 0;
  for (uint64_t page = rip & ~0xFFFull, n = 0; n < 512 && base == 0; page -= 0x1000, ++n) {
    auto magic = read32(page);
    if (!magic) continue;  // a hole between sections (or below the image)
    if ((*magic & 0xFFFF) == 0x5A4D) base = page;
  }
  if (base == 0) return false;
  auto& functions = functions_[base];
  if (functions.empty()) {
    const auto lfanew = read32(base + 0x3C);
    if (!lfanew || *lfanew > 0x1000 || read32(base + *lfanew) != 0x4550) return false;  // "PE\0\0"
    const uint64_t directory = base + *lfanew + 24 + 112 + 3 * 8;  // PE32+ DataDirectory[EXCEPTION]
    const auto rva = read32(directory), size = read32(directory + 4);
    if (!rva || !size || *size > (1u << 20)) return false;
    std::vector<uint8_t> table(*size);
    if (read_virtual(cpu, base + *rva, table.data(), *size) != *size) return false;
    for (size_t at = 0; at + 12 <= table.size(); at += 12) {
      uint32_t range[2];
      std::memcpy(range, table.data() + at, 8);
      functions.emplace_back(range[0], range[1]);
    }
    if (functions.empty()) return false;
  }
  const uint64_t offset = rip - base;
  return std::none_of(functions.begin(), functions.end(),
                      [&](const auto& f) { return f.first < offset && offset < f.second; });
}

cpu_event qemu_machine::halt() {
  if (!running_) return {};
  if (pending_) {
    running_ = false;
    return *std::exchange(pending_, std::nullopt);
  }
  link_.interrupt();
  auto reply = link_.receive(10s);
  if (!reply) {
    running_ = false;
    return {cpu_event::kind::lost, 0, 0, false, "QEMU's gdbstub did not stop the VM on ^C"};
  }
  if (reply->size() >= 3 && (*reply)[0] == 'T' && reply->substr(1, 2) == "02") {
    running_ = false;
    if (!fetch_registers()) return {cpu_event::kind::lost, 0, 0, false, "QEMU's gdbstub stopped answering"};
    const int cpu = cpu_of(*reply);
    // The interrupt that calls DbgBreakPointWithStatus is emulated as a call from the
    // interrupted instruction, so it is taken where such a call unwinds like the real interrupt
    // frame would (see unwinds_poorly): a few instructions later at most, and an interrupt
    // arrives at no particular instruction anyway.
    for (int i = 0; i < 16 && !inserted_.contains(cpus_[static_cast<size_t>(cpu)].context.Rip) &&
                    unwinds_poorly(cpu, cpus_[static_cast<size_t>(cpu)].context.Rip);
         ++i) {
      link_.request("Hc" + threads_[static_cast<size_t>(cpu)]);
      link_.send("s");
      if (!link_.receive(10s) || !fetch_registers()) {
        return {cpu_event::kind::lost, cpu, 0, false, "QEMU's gdbstub stopped answering"};
      }
    }
    // Stopped on one of our breakpoints (QEMU took the ^C as it reached it): the int3 there
    // traps before the interrupt is taken.
    if (!stepping_ && inserted_.contains(cpus_[static_cast<size_t>(cpu)].context.Rip)) {
      return {cpu_event::kind::breakpoint, cpu};
    }
    return {};
  }
  return stop_from(*reply);  // it stopped on its own first (the ^C then found it stopped)
}

}  // namespace kdsim
