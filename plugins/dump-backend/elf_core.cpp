#include "elf_core.hpp"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <absl/strings/str_format.h>
#include <toolhost/paging/page_walk.hpp>

namespace toolhost::dump_backend {
namespace {

using namespace toolhost::snapshots;  // the snapshot model and its x86 register names

// Offsets inside the x86-64 Linux elf_prstatus note (also what QEMU writes).
constexpr size_t kPrstatusCursig = 12;
constexpr size_t kPrstatusPid = 32;
constexpr size_t kPrstatusRegs = 112;
constexpr size_t kPrstatusSize = kPrstatusRegs + 27 * 8;
// user_regs_struct order.
constexpr x86_reg kUserRegs[27] = {
    r15, r14, r13,    r12, rbp, rbx,     r11,     r10, r9, r8, rax, rcx, rdx, rsi, rdi, x86_reg_count /* orig_rax */,
    rip, cs,  eflags, rsp, ss,  fs_base, gs_base, ds,  es, fs, gs};
// elf_prpsinfo: pr_fname[16] at 40.
constexpr size_t kPrpsinfoFname = 40;
// QEMUCPUState (dump/dump.c): version, size, 18 u64 (rax..r15, rip, rflags), 10 segments of
// 24 bytes (cs ds es fs gs ss ldt tr gdt idt: selector, limit, flags, pad u32, base u64),
// cr[5], kernel_gs_base.
constexpr size_t kQemuRegs = 8;
constexpr x86_reg kQemuOrder[18] = {rax, rbx, rcx, rdx, rsi, rdi, rsp, rbp, r8,
                                    r9,  r10, r11, r12, r13, r14, r15, rip, eflags};
constexpr size_t kQemuSegments = kQemuRegs + 18 * 8;
constexpr x86_reg kQemuSegmentOrder[6] = {cs, ds, es, fs, gs, ss};
constexpr size_t kQemuCr = kQemuSegments + 10 * 24;
constexpr size_t kQemuSize = kQemuCr + 5 * 8;

constexpr uint32_t kNtPrstatus = 1;
constexpr uint32_t kNtPrpsinfo = 3;
constexpr uint32_t kNtFile = 0x46494c45;
constexpr uint32_t kNtSiginfo = 0x53494749;  // "SIGI"

uint64_t u64_at(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

struct segment {
  uint64_t address;  // p_vaddr (process) or p_paddr (system)
  uint64_t file_size;
  uint64_t mem_size;
  uint64_t offset;
};

std::string elf_problem(const char* what) { return absl::StrFormat("%s: %s", what, elf_errmsg(-1)); }

class elf_core final : public snapshot {
 public:
  explicit elf_core(std::unique_ptr<mapped_file> file) : file_(std::move(file)) {}

  absl::Status load() {
    elf_version(EV_CURRENT);
    const auto bytes = file_->bytes();
    Elf* elf = elf_memory(file_->writable(), bytes.size());
    if (elf == nullptr) return absl::InvalidArgumentError(elf_problem("not a readable ELF file"));
    absl::Status s = load_from(elf);
    elf_end(elf);
    return s;
  }

  const char* os() const override { return qemu_ ? "" : "linux"; }
  const char* kind() const override { return qemu_ ? "system" : "process"; }
  bool has_physical() const override { return qemu_; }
  bool has_virtual() const override { return true; }

  absl::StatusOr<size_t> read_physical(uint64_t address, std::span<uint8_t> out) override {
    if (!qemu_) return absl::UnimplementedError("a process core holds memory by virtual address only");
    return read_segments(address, out, "physical");
  }

  absl::StatusOr<size_t> read_virtual(uint64_t address, std::span<uint8_t> out, int64_t thread) override {
    if (!qemu_) return read_segments(address, out, "virtual");
    const uint64_t cr3_value = threads[thread_index(thread)].values[register_index(cr3)];
    return paging::read_virtual(cr3_value, address, out, [this](uint64_t pa, std::span<uint8_t> buf) {
      absl::StatusOr<size_t> n = read_segments(pa, buf, "physical");
      if (!n.ok()) return n.status();
      if (*n != buf.size()) return absl::NotFoundError(absl::StrFormat("physical 0x%x is not in the dump", pa + *n));
      return absl::OkStatus();
    });
  }

  toolhost_dt_stop_t initial_stop() const override {
    toolhost_dt_stop_t s{};
    s.struct_size = sizeof s;
    s.thread = threads.empty() ? -1 : threads.front().id;
    s.pc = threads.empty() ? 0 : threads.front().values[register_index(rip)];
    if (qemu_) {
      s.reason = TOOLHOST_DT_STOP_INTERRUPT;
      std::snprintf(s.description, sizeof s.description, "QEMU guest memory dump (%zu vCPUs)", threads.size());
    } else {
      s.reason = TOOLHOST_DT_STOP_SIGNAL;
      s.code = signal_;
      std::snprintf(s.description, sizeof s.description, "core file: signal %d (%s)", signal_,
                    signal_ > 0 ? strsignal(signal_) : "none");
    }
    return s;
  }

  std::string siginfo() const override { return siginfo_; }

  std::string hints_json() const override {
    std::string h = absl::StrFormat("\"format\":\"%s\"", qemu_ ? "qemu-elf" : "elf-core");
    if (!executable_.empty()) {
      std::string quoted;
      for (char c : executable_) {
        if (c == '"' || c == '\\') quoted += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) quoted += c;
      }
      h += absl::StrFormat(",\"executable\":\"%s\"", quoted);
    }
    if (qemu_ && !threads.empty())
      h += absl::StrFormat(",\"dtb\":\"0x%x\"", threads.front().values[register_index(cr3)]);
    if (qemu_) {
      std::string ram;
      for (const segment& s : segments_) {
        ram += absl::StrFormat("%s{\"start\":\"0x%x\",\"end\":\"0x%x\"}", ram.empty() ? "" : ",", s.address,
                               s.address + s.file_size);
      }
      h += ",\"ram\":[" + ram + "]";
    }
    return h;
  }

  const char* why_no_run_control() const override {
    return "A core file is a snapshot and does not run: resume, step, interrupt and breakpoints need a live target "
           "(open the program with the gdb backend instead).";
  }

  size_t register_index(x86_reg r) const {
    return static_cast<size_t>(std::find(registers.begin(), registers.end(), r) - registers.begin());
  }
  size_t thread_index(int64_t id) const {
    for (size_t i = 0; i < threads.size(); ++i) {
      if (threads[i].id == id) return i;
    }
    return 0;
  }

 private:
  absl::Status load_from(Elf* elf) {
    GElf_Ehdr ehdr;
    if (gelf_getehdr(elf, &ehdr) == nullptr) return absl::InvalidArgumentError(elf_problem("no ELF header"));
    if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != EM_X86_64) {
      return absl::InvalidArgumentError(
          "the ELF file is not x86-64 (e_machine/EI_CLASS); only x86-64 cores are supported");
    }
    if (ehdr.e_type != ET_CORE) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the ELF file is not a core file (e_type is %u, not ET_CORE)", ehdr.e_type));
    }
    const uint64_t file_size = file_->bytes().size();
    if (ehdr.e_phoff > file_size || static_cast<uint64_t>(ehdr.e_phnum) * ehdr.e_phentsize > file_size - ehdr.e_phoff) {
      return absl::OutOfRangeError(absl::StrFormat(
          "truncated core: the program header table (e_phoff 0x%x, e_phnum %u) ends beyond the file's 0x%x bytes",
          ehdr.e_phoff, ehdr.e_phnum, file_size));
    }
    size_t count = 0;
    if (elf_getphdrnum(elf, &count) != 0) return absl::InvalidArgumentError(elf_problem("corrupt core: bad e_phnum"));
    std::vector<std::pair<uint64_t, uint64_t>> notes;
    std::vector<segment> virt;
    std::vector<segment> phys;
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrFormat("program header %u lies outside the file (e_phoff/e_phnum)", i));
      }
      if (ph.p_type != PT_LOAD && ph.p_type != PT_NOTE) continue;
      if (ph.p_offset > file_size || ph.p_filesz > file_size - ph.p_offset) {
        return absl::OutOfRangeError(absl::StrFormat(
            "truncated core: program header %u (p_offset 0x%x, p_filesz 0x%x) ends beyond the file's 0x%x bytes", i,
            ph.p_offset, ph.p_filesz, file_size));
      }
      if (ph.p_type == PT_NOTE) {
        notes.emplace_back(ph.p_offset, ph.p_filesz);
        continue;
      }
      if (ph.p_filesz > ph.p_memsz) {
        return absl::InvalidArgumentError(
            absl::StrFormat("program header %u: p_filesz 0x%x exceeds p_memsz 0x%x", i, ph.p_filesz, ph.p_memsz));
      }
      if (ph.p_filesz == 0) continue;  // not saved (e.g. read-only file mappings in a gcore)
      virt.push_back({ph.p_vaddr, ph.p_filesz, ph.p_memsz, ph.p_offset});
      phys.push_back({ph.p_paddr, ph.p_filesz, ph.p_memsz, ph.p_offset});
    }
    for (const auto& [offset, size] : notes) {
      if (absl::Status s = read_notes(elf, offset, size); !s.ok()) return s;
    }
    if (qemu_) {
      if (qemu_states_.size() != prstatus_.size()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "the QEMU dump has %u NT_PRSTATUS notes but %u QEMU CPU notes", prstatus_.size(), qemu_states_.size()));
      }
      segments_ = std::move(phys);
    } else {
      segments_ = std::move(virt);
    }
    std::sort(segments_.begin(), segments_.end(),
              [](const segment& a, const segment& b) { return a.address < b.address; });
    build_threads();
    return absl::OkStatus();
  }

  absl::Status read_notes(Elf* elf, uint64_t offset, uint64_t size) {
    Elf_Data* data = elf_getdata_rawchunk(elf, static_cast<int64_t>(offset), size, ELF_T_NHDR);
    if (data == nullptr) return absl::InvalidArgumentError(elf_problem("unreadable PT_NOTE segment"));
    size_t at = 0;
    GElf_Nhdr nh;
    size_t name_at = 0;
    size_t desc_at = 0;
    while (at < data->d_size) {
      const size_t next = gelf_getnote(data, at, &nh, &name_at, &desc_at);
      if (next == 0)
        return absl::InvalidArgumentError(absl::StrFormat("malformed note at offset 0x%x of the PT_NOTE segment", at));
      const auto* base = static_cast<const uint8_t*>(data->d_buf);
      const std::string_view name(reinterpret_cast<const char*>(base + name_at), nh.n_namesz > 0 ? nh.n_namesz - 1 : 0);
      const std::span<const uint8_t> desc(base + desc_at, nh.n_descsz);
      if (name == "CORE" && nh.n_type == kNtPrstatus) {
        if (desc.size() < kPrstatusSize) {
          return absl::InvalidArgumentError(
              absl::StrFormat("NT_PRSTATUS note is %u bytes, shorter than x86-64's %u", desc.size(), kPrstatusSize));
        }
        prstatus_.emplace_back(desc.begin(), desc.end());
      } else if (name == "CORE" && nh.n_type == kNtPrpsinfo && desc.size() >= kPrpsinfoFname + 16) {
        const char* f = reinterpret_cast<const char*>(desc.data() + kPrpsinfoFname);
        command_.assign(f, strnlen(f, 16));
      } else if (name == "CORE" && nh.n_type == kNtSiginfo && siginfo_.empty()) {
        siginfo_.assign(reinterpret_cast<const char*>(desc.data()), desc.size());  // the first thread's
      } else if (name == "CORE" && nh.n_type == kNtFile) {
        if (absl::Status s = read_nt_file(desc); !s.ok()) return s;
      } else if (name == "QEMU") {
        if (desc.size() < kQemuSize) {
          return absl::InvalidArgumentError(
              absl::StrFormat("QEMU CPU note is %u bytes, shorter than the %u it needs", desc.size(), kQemuSize));
        }
        qemu_ = true;
        qemu_states_.emplace_back(desc.begin(), desc.end());
      }
      at = next;
    }
    return absl::OkStatus();
  }

  // NT_FILE: count, page size, count x {start, end, file offset in pages}, then count names.
  absl::Status read_nt_file(std::span<const uint8_t> desc) {
    if (desc.size() < 16) return absl::InvalidArgumentError("NT_FILE note is shorter than its 16-byte header");
    const uint64_t n = u64_at(desc.data());
    if (n > (desc.size() - 16) / 24) {
      return absl::InvalidArgumentError(
          absl::StrFormat("NT_FILE note declares %u files, more than its %u bytes hold", n, desc.size()));
    }
    const uint64_t page_size = u64_at(desc.data() + 8);
    size_t names = 16 + static_cast<size_t>(n) * 24;
    std::map<std::string, module_info> by_path;
    std::vector<std::string> order;
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t* e = desc.data() + 16 + i * 24;
      if (names >= desc.size()) return absl::InvalidArgumentError("NT_FILE note: the file names end early");
      const char* text = reinterpret_cast<const char*>(desc.data() + names);
      const size_t len = strnlen(text, desc.size() - names);
      std::string path(text, len);
      names += len + 1;
      const uint64_t start = u64_at(e);
      const uint64_t end = u64_at(e + 8);
      if (end < start)
        return absl::InvalidArgumentError(
            absl::StrFormat("NT_FILE entry %u ends (0x%x) before it starts (0x%x)", i, end, start));
      const uint64_t page = u64_at(e + 16);
      if (page_size != 0 && page <= UINT64_MAX / page_size) file_maps_.push_back({start, end, page * page_size, path});
      auto [it, inserted] = by_path.try_emplace(path);
      module_info& m = it->second;
      if (inserted) {
        order.push_back(path);
        m.path = path;
        m.name = path.substr(path.rfind('/') + 1);
        m.base = start;
        m.size = end - start;
      } else {
        const uint64_t top = std::max(m.base + m.size, end);
        m.base = std::min(m.base, start);
        m.size = top - m.base;
      }
    }
    for (const std::string& p : order) modules.push_back(by_path[p]);
    return absl::OkStatus();
  }

  void build_threads() {
    if (qemu_) {
      registers = {rax, rbx, rcx,    rdx, rsi, rdi, rbp, rsp, r8, r9,      r10,     r11, r12, r13, r14,
                   r15, rip, eflags, cs,  ss,  ds,  es,  fs,  gs, fs_base, gs_base, cr0, cr2, cr3, cr4};
    } else {
      registers = {rax, rbx, rcx, rdx, rsi,    rdi, rbp, rsp, r8, r9, r10, r11,     r12,
                   r13, r14, r15, rip, eflags, cs,  ss,  ds,  es, fs, gs,  fs_base, gs_base};
    }
    for (size_t i = 0; i < prstatus_.size(); ++i) {
      const std::vector<uint8_t>& p = prstatus_[i];
      std::vector<uint64_t> all(x86_reg_count, 0);
      if (qemu_) {
        const std::vector<uint8_t>& q = qemu_states_[i];
        for (int k = 0; k < 18; ++k) all[kQemuOrder[k]] = u64_at(q.data() + kQemuRegs + 8 * k);
        for (int k = 0; k < 6; ++k) all[kQemuSegmentOrder[k]] = u32_at(q.data() + kQemuSegments + 24 * k);
        all[fs_base] = u64_at(q.data() + kQemuSegments + 24 * 3 + 16);
        all[gs_base] = u64_at(q.data() + kQemuSegments + 24 * 4 + 16);
        all[cr0] = u64_at(q.data() + kQemuCr);
        all[cr2] = u64_at(q.data() + kQemuCr + 16);
        all[cr3] = u64_at(q.data() + kQemuCr + 24);
        all[cr4] = u64_at(q.data() + kQemuCr + 32);
      } else {
        for (int k = 0; k < 27; ++k) {
          if (kUserRegs[k] != x86_reg_count) all[kUserRegs[k]] = u64_at(p.data() + kPrstatusRegs + 8 * k);
        }
      }
      thread_state t;
      const uint32_t pid = u32_at(p.data() + kPrstatusPid);
      t.id = qemu_ ? static_cast<int64_t>(i) : static_cast<int64_t>(pid);
      t.name = qemu_ ? absl::StrFormat("vCPU %u", i) : absl::StrFormat("LWP %u", pid);
      for (x86_reg r : registers) t.values.push_back(all[r]);
      threads.push_back(std::move(t));
      if (i == 0) signal_ = static_cast<int>(p[kPrstatusCursig] | (p[kPrstatusCursig + 1] << 8));
    }
    if (!qemu_) {
      for (const module_info& m : modules) {
        if (!command_.empty() && m.name.rfind(command_, 0) == 0) {
          executable_ = m.path;
          break;
        }
      }
      if (executable_.empty() && !modules.empty()) executable_ = modules.front().path;
    }
  }

  absl::StatusOr<size_t> read_segments(uint64_t address, std::span<uint8_t> out, const char* space) {
    const auto bytes = file_->bytes();
    size_t done = 0;
    while (done < out.size()) {
      const uint64_t at = address + done;
      auto next = std::upper_bound(segments_.begin(), segments_.end(), at,
                                   [](uint64_t a, const segment& s) { return a < s.address; });
      if (next != segments_.begin()) {
        const segment& it = *(next - 1);
        if (at - it.address < it.file_size) {
          const uint64_t in_segment = it.file_size - (at - it.address);
          const size_t chunk = static_cast<size_t>(std::min<uint64_t>(in_segment, out.size() - done));
          std::memcpy(out.data() + done, bytes.data() + it.offset + (at - it.address), chunk);
          done += chunk;
          continue;
        }
      }
      // Not saved in the core: a process core leaves out unmodified file mappings (code,
      // read-only data), which read from the mapped file, as gdb does.
      const uint64_t limit = next == segments_.end() ? UINT64_MAX : next->address;
      const size_t chunk =
          qemu_ ? 0
                : read_mapped_file(
                      at, out.subspan(done, static_cast<size_t>(std::min<uint64_t>(out.size() - done, limit - at))));
      if (chunk == 0) break;
      done += chunk;
    }
    if (done == 0) return absl::NotFoundError(absl::StrFormat("%s address 0x%x is not in the core", space, address));
    return done;
  }

  size_t read_mapped_file(uint64_t at, std::span<uint8_t> out) {
    for (const file_map& f : file_maps_) {
      if (at < f.start || at >= f.end) continue;
      auto [it, inserted] = opened_.try_emplace(f.path);
      if (inserted) {
        absl::StatusOr<std::unique_ptr<mapped_file>> file = mapped_file::open(f.path);
        if (file.ok()) it->second = std::move(*file);
      }
      if (it->second == nullptr) return 0;
      const auto bytes = it->second->bytes();
      const uint64_t offset = f.offset + (at - f.start);
      if (offset >= bytes.size()) return 0;
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>({out.size(), f.end - at, bytes.size() - offset}));
      std::memcpy(out.data(), bytes.data() + offset, chunk);
      return chunk;
    }
    return 0;
  }

  struct file_map {
    uint64_t start;
    uint64_t end;
    uint64_t offset;  // in the file, bytes
    std::string path;
  };

  std::unique_ptr<mapped_file> file_;
  std::vector<file_map> file_maps_;
  std::map<std::string, std::unique_ptr<mapped_file>> opened_;  // nullptr: could not be opened
  bool qemu_ = false;
  int signal_ = 0;
  std::string siginfo_;
  std::string command_;
  std::string executable_;
  std::vector<std::vector<uint8_t>> prstatus_;
  std::vector<std::vector<uint8_t>> qemu_states_;
  std::vector<segment> segments_;
};

}  // namespace

bool looks_like_elf(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), ELFMAG, SELFMAG) == 0;
}

absl::StatusOr<std::unique_ptr<snapshot>> open_elf_core(std::unique_ptr<mapped_file> file) {
  auto core = std::make_unique<elf_core>(std::move(file));
  if (absl::Status s = core->load(); !s.ok()) return s;
  if (core->threads.empty()) {
    return absl::InvalidArgumentError("the core file has no NT_PRSTATUS note, so no thread and no registers");
  }
  return std::unique_ptr<snapshot>(std::move(core));
}

}  // namespace toolhost::dump_backend
