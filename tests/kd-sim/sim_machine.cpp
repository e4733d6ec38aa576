#include "sim_machine.h"

#include <cstring>
#include <thread>

namespace kdsim {
namespace {

constexpr uint64_t kPresent = 1, kWritable = 2, kLarge = 0x80;

void put64(std::vector<uint8_t>& m, uint64_t at, uint64_t v) { std::memcpy(&m[at], &v, 8); }

uint64_t debug_address(const KSPECIAL_REGISTERS& s, int n) {
  const uint64_t regs[] = {s.KernelDr0, s.KernelDr1, s.KernelDr2, s.KernelDr3};
  return regs[n];
}

// The built-in kernel: CPU 0 counts in rbx and says hello through DbgPrint every fifth turn.
const std::vector<uint8_t>& loop_code() {
  static const std::vector<uint8_t> code = {
      0xB9, 0x05, 0x00, 0x00, 0x00,  // 0x1000 mov ecx, 5
      0x48, 0xFF, 0xC3,              // 0x1005 inc rbx
      0x90,                          // 0x1008 nop
      0xF3, 0x90,                    // 0x1009 pause
      0x48, 0xFF, 0xC9,              // 0x100B dec rcx
      0x75, 0xF5,                    // 0x100E jnz 0x1005
      0xE8, 0xEB, 0x00, 0x00, 0x00,  // 0x1010 call 0x1100
      0xEB, 0xE9,                    // 0x1015 jmp 0x1000
  };
  return code;
}

}  // namespace

sim_machine::sim_machine(int cpus) : machine(cpus), extra_(static_cast<size_t>(cpus)) {
  default_cr3_ = kPml4;
  boot();
}

sim_machine::sim_machine(int cpus, machine_image image)
    : machine(cpus), image_(std::move(image)), extra_(static_cast<size_t>(cpus)) {
  boot();
}

bool sim_machine::boot() {
  for (auto& e : extra_) e = {};
  if (image_) {
    memory_ = image_->memory;
    for (size_t i = 0; i < cpus_.size(); ++i) {
      cpu_state& c = cpus_[i];
      c = cpu_state{};
      c.context = image_->context;
      c.special = image_->special;
      c.msrs[0xC0000101] = image_->gs_base;  // IA32_GS_BASE: the KPCR
      c.msrs[0x1B] = 0xFEE00900 | (i == 0 ? 0x100 : 0);
    }
    default_cr3_ = image_->special.Cr3;
    return true;
  }
  memory_.assign(kPhysicalSize, 0);
  break_with_status_ = kBreakWithStatus;
  // Kernel VA 0xFFFFF800'00000000: PML4[0x1F0] -> PDPT 0x2000 -> PD 0x3000; PD[0] -> PT 0x4000
  // (512 small pages at phys 0x100000), PD[1] -> a 2 MiB page at phys 0x400000, PD[2] absent.
  put64(memory_, kPml4 + 0x1F0 * 8, 0x2000 | kPresent | kWritable);
  put64(memory_, 0x2000, 0x3000 | kPresent | kWritable);
  put64(memory_, 0x3000, 0x4000 | kPresent | kWritable);
  put64(memory_, 0x3000 + 8, 0x400000 | kPresent | kWritable | kLarge);
  for (uint64_t i = 0; i < 512; ++i) put64(memory_, 0x4000 + i * 8, (0x100000 + i * 0x1000) | kPresent | kWritable);

  auto poke = [this](uint64_t va, const std::vector<uint8_t>& bytes) {
    write_space(kPml4, va, bytes.data(), static_cast<uint32_t>(bytes.size()));
  };
  poke(kKernelBase, {'M', 'Z', 0x90, 0x00});
  poke(kLoopStart, loop_code());
  std::vector<uint8_t> hello = {0x48, 0xFF, 0xC0,              // inc rax
                                0xB8, 0x01, 0x00, 0x00, 0x00,  // mov eax, 1 (BREAKPOINT_PRINT)
                                0x48, 0xB9};                   // mov rcx, imm64
  for (int i = 0; i < 8; ++i) hello.push_back(static_cast<uint8_t>(kMessage >> (8 * i)));
  const std::string message = "Hello from kd-sim\n";
  hello.insert(hello.end(), {0xBA, static_cast<uint8_t>(message.size()), 0x00, 0x00, 0x00});  // mov edx, len
  hello.insert(hello.end(), {0xCD, 0x2D, 0xC3});                                              // int 2d; ret
  poke(kSayHello, hello);
  poke(kIdleLoop, {0xF3, 0x90, 0xEB, 0xFC});  // pause; jmp back to the pause
  poke(kBreakWithStatus, {0xCC, 0xC3});
  poke(kMessage, std::vector<uint8_t>(message.begin(), message.end()));

  for (size_t i = 0; i < cpus_.size(); ++i) {
    cpu_state& c = cpus_[i];
    c = cpu_state{};
    c.context.ContextFlags = 0x0010001F;
    c.context.SegCs = 0x10;
    c.context.SegDs = c.context.SegEs = c.context.SegSs = 0x2B;
    c.context.SegFs = 0x53;
    c.context.SegGs = 0x2B;
    c.context.EFlags = 0x202;
    c.context.Rip = i == 0 ? kLoopStart : kIdleLoop;
    c.context.Rsp = kKernelBase + 0x1F0000 - i * 0x10000;
    c.special.Cr0 = 0x80050033;
    c.special.Cr3 = kPml4;
    c.special.Cr4 = 0x350EF8;
    c.special.KernelDr7 = 0x400;
    c.special.KernelDr6 = 0xFFFF0FF0;
    c.msrs[0xC0000082] = kKernelBase + 0x1400;                 // IA32_LSTAR
    c.msrs[0xC0000101] = kKernelBase + 0x300000 + i * 0x1000;  // IA32_GS_BASE: the KPCR
    c.msrs[0x1B] = 0xFEE00900 | (i == 0 ? 0x100 : 0);          // IA32_APIC_BASE
  }
  return true;
}

uint32_t sim_machine::read_physical(uint64_t pa, uint8_t* out, uint32_t size) {
  if (pa >= memory_.size()) return 0;
  const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(size, memory_.size() - pa));
  std::memcpy(out, &memory_[pa], n);
  return n;
}

uint32_t sim_machine::write_physical(uint64_t pa, const uint8_t* in, uint32_t size) {
  if (pa >= memory_.size()) return 0;
  const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(size, memory_.size() - pa));
  std::memcpy(&memory_[pa], in, n);
  return n;
}

void sim_machine::call_break_with_status(int cpu, uint64_t status) {
  watch(cpu, cpus_[static_cast<size_t>(cpu)].context.Rsp - 8, 8, true);
  machine::call_break_with_status(cpu, status);
}

bool sim_machine::sleeping(int cpu) const {
  return std::chrono::steady_clock::now() < extra_[static_cast<size_t>(cpu)].sleep_until;
}

uint64_t& sim_machine::gpr(CONTEXT& c, int index) {
  uint64_t* regs[] = {&c.Rax, &c.Rcx, &c.Rdx, &c.Rbx, &c.Rsp, &c.Rbp, &c.Rsi, &c.Rdi,
                      &c.R8,  &c.R9,  &c.R10, &c.R11, &c.R12, &c.R13, &c.R14, &c.R15};
  return *regs[index & 15];
}

uint32_t sim_machine::take_data_hits(int cpu) {
  cpu_extra& s = extra_[static_cast<size_t>(cpu)];
  const uint32_t hits = s.data_hits;
  s.data_hits = 0;
  return hits;
}

void sim_machine::watch(int cpu, uint64_t va, uint32_t size, bool write) {
  const cpu_state& s = cpus_[static_cast<size_t>(cpu)];
  cpu_extra& x = extra_[static_cast<size_t>(cpu)];
  const uint64_t dr7 = s.special.KernelDr7;
  static constexpr uint32_t kLength[4] = {1, 2, 8, 4};  // the LEN field's encoding
  for (int n = 0; n < 4; ++n) {
    if (((dr7 >> (2 * n)) & 3) == 0) continue;
    const uint64_t rw = (dr7 >> (16 + 4 * n)) & 3;
    if (rw == 0 || rw == 2 || (rw == 1 && !write)) continue;  // execute, I/O, or a read of a write watch
    const uint64_t start = debug_address(s.special, n);
    const uint64_t end = start + kLength[(dr7 >> (18 + 4 * n)) & 3];
    if (va < end && start < va + size) x.data_hits |= 1u << n;
  }
}

bool sim_machine::push_watched(int cpu, uint64_t value) {
  CONTEXT& c = cpus_[static_cast<size_t>(cpu)].context;
  c.Rsp -= 8;
  watch(cpu, c.Rsp, 8, true);
  return write_virtual(cpu, c.Rsp, reinterpret_cast<uint8_t*>(&value), 8) == 8;
}

std::optional<uint64_t> sim_machine::pop_watched(int cpu) {
  CONTEXT& c = cpus_[static_cast<size_t>(cpu)].context;
  uint64_t value = 0;
  watch(cpu, c.Rsp, 8, false);
  if (read_virtual(cpu, c.Rsp, reinterpret_cast<uint8_t*>(&value), 8) != 8) return std::nullopt;
  c.Rsp += 8;
  return value;
}

sim_machine::step_result sim_machine::step(int cpu) {
  if (image_) return {};  // a captured processor stays where it is
  cpu_state& s = cpus_[static_cast<size_t>(cpu)];
  cpu_extra& x = extra_[static_cast<size_t>(cpu)];
  CONTEXT& c = s.context;
  uint8_t code[16] = {};
  const uint32_t have = read_virtual(cpu, c.Rip, code, sizeof(code));
  if (have == 0) return {step_result::kind::illegal, {}};
  auto imm32 = [&](int at) {
    uint32_t v;
    std::memcpy(&v, code + at, 4);
    return v;
  };
  constexpr uint32_t kZeroFlag = 0x40;
  switch (code[0]) {
    case 0xCC: return {step_result::kind::breakpoint, {}};
    case 0x90: c.Rip += 1; return {};
    case 0xF3:
      if (code[1] != 0x90) break;
      x.sleep_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
      c.Rip += 2;
      return {};
    case 0xB8:
    case 0xB9:
    case 0xBA:
    case 0xBB:
      gpr(c, code[0] - 0xB8) = imm32(1);
      c.Rip += 5;
      return {};
    case 0x48:
      if (code[1] == 0xFF && (code[2] & 0xF8) == 0xC0) {  // inc r64
        gpr(c, code[2] & 7) += 1;
        c.Rip += 3;
        return {};
      }
      if (code[1] == 0xFF && (code[2] & 0xF8) == 0xC8) {  // dec r64
        uint64_t& r = gpr(c, code[2] & 7);
        r -= 1;
        c.EFlags = r == 0 ? (c.EFlags | kZeroFlag) : (c.EFlags & ~kZeroFlag);
        c.Rip += 3;
        return {};
      }
      if (code[1] >= 0xB8 && code[1] <= 0xBF) {  // mov r64, imm64
        uint64_t v;
        std::memcpy(&v, code + 2, 8);
        gpr(c, code[1] - 0xB8) = v;
        c.Rip += 10;
        return {};
      }
      break;
    case 0x75:
      c.Rip += 2;
      if ((c.EFlags & kZeroFlag) == 0) c.Rip += static_cast<int8_t>(code[1]);
      return {};
    case 0xEB: c.Rip += 2 + static_cast<int8_t>(code[1]); return {};
    case 0xE8: {
      const uint64_t next = c.Rip + 5;
      if (!push_watched(cpu, next)) break;
      c.Rip = next + static_cast<int32_t>(imm32(1));
      return {};
    }
    case 0xC3: {
      auto to = pop_watched(cpu);
      if (!to) break;
      c.Rip = *to;
      return {};
    }
    case 0xCD:
      if (code[1] != 0x2D) break;
      c.Rip += 2;
      if ((c.Rax & 0xFFFFFFFF) == 1) {  // BREAKPOINT_PRINT: rcx = text, edx = length
        std::string text(static_cast<size_t>(c.Rdx & 0xFFFF), '\0');
        watch(cpu, c.Rcx, static_cast<uint32_t>(text.size()), false);
        const uint32_t got =
            read_virtual(cpu, c.Rcx, reinterpret_cast<uint8_t*>(text.data()), static_cast<uint32_t>(text.size()));
        text.resize(got);
        return {step_result::kind::dbgprint, text};
      }
      return {};
    default: break;
  }
  return {step_result::kind::illegal, {}};
}

// One slice: every processor that is not pausing executes one instruction (only the traced one
// while tracing). Instruction breakpoints fault before the instruction, data watches and the
// trace flag trap after it.
cpu_event sim_machine::run(bool tracing, int current_cpu, const std::function<bool(const std::string&)>& print) {
  for (int cpu = 0; cpu < cpu_count(); ++cpu) {
    if (tracing && cpu != current_cpu) continue;
    if (!tracing && sleeping(cpu)) continue;
    if (const uint32_t hits = execute_hits(cpu, cpus_[static_cast<size_t>(cpu)].context.Rip); hits != 0) {
      return {cpu_event::kind::single_step, cpu, hits};
    }
    const step_result r = step(cpu);
    if (r.what == step_result::kind::breakpoint) return {cpu_event::kind::breakpoint, cpu};
    if (r.what == step_result::kind::illegal) return {cpu_event::kind::illegal, cpu};
    const bool go_on = r.what != step_result::kind::dbgprint || print(r.text);
    const uint32_t data_hits = take_data_hits(cpu);
    if (tracing || data_hits != 0) return {cpu_event::kind::single_step, cpu, data_hits, tracing};
    if (!go_on) return {};
  }
  return {};
}

}  // namespace kdsim
