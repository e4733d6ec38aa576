#include "windows_kernel.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include <absl/strings/str_format.h>
#include <toolhost/paging/page_walk.hpp>
#include <toolhost/text/utf16.hpp>

namespace toolhost::debugger::windows {

namespace {

constexpr uint64_t kScanStart = 0x1000, kScanEnd = 0x1000000;  // DTB candidates: the first 16 MiB
constexpr uint64_t kKernelLow = 0xfffff80000000000ull, kKernelHigh = 0xfffff80800000000ull;
constexpr uint64_t kFrame = 0x000ffffffffff000ull;
constexpr size_t kMaxProcesses = 65536, kMaxThreads = 16384, kMaxModules = 4096;

uint64_t get_u64(const std::vector<uint8_t>& b, uint64_t at) {
  uint64_t v = 0;
  if (at + 8 <= b.size()) std::memcpy(&v, b.data() + at, 8);
  return v;
}
uint32_t get_u32(const std::vector<uint8_t>& b, uint64_t at) {
  uint32_t v = 0;
  if (at + 4 <= b.size()) std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint8_t get_u8(const std::vector<uint8_t>& b, uint64_t at) { return at < b.size() ? b[at] : 0; }

uint64_t rol(uint64_t v, unsigned n) { return n == 0 ? v : (v << n) | (v >> (64 - n)); }

paging::read_physical_fn exact_reader(const memory_access& m) {
  return [&m](uint64_t address, std::span<uint8_t> out) -> absl::Status {
    if (!m.physical || m.physical(address, out) != out.size()) {
      return absl::NotFoundError(absl::StrFormat("physical 0x%x is not readable", address));
    }
    return absl::OkStatus();
  };
}

// The PML4 index whose entry points back at the table itself, when exactly one does.
int self_map_of(const memory_access& m, uint64_t dtb) {
  std::vector<uint8_t> upper(256 * 8);
  if (!m.physical || m.physical(dtb + 256 * 8, upper) != upper.size()) return -1;
  int found = -1;
  for (int i = 0; i < 256; ++i) {
    const uint64_t e = get_u64(upper, i * 8);
    if ((e & 1) && (e & kFrame) == (dtb & kFrame)) {
      if (found >= 0) return -1;
      found = 256 + i;
    }
  }
  return found;
}

// KUSER_SHARED_DATA mapped, kernel-only and no-execute: what a Windows kernel's tables show.
bool maps_kuser(const memory_access& m, uint64_t dtb) {
  auto t = paging::translate(dtb, kKuserSharedData, exact_reader(m));
  return t.ok() && !t->user && t->no_execute;
}

// An ntoskrnl header page: MZ\x90\0, "POOLCODE" at an 8-aligned offset of the section table,
// a PE signature and the x64 machine.
bool is_kernel_header(const std::vector<uint8_t>& page) {
  if (page.size() < 0x1000 || std::memcmp(page.data(), "MZ\x90\0", 4) != 0) return false;
  bool poolcode = false;
  for (size_t i = 0; i + 8 <= 0x1000 && !poolcode; i += 8) poolcode = std::memcmp(page.data() + i, "POOLCODE", 8) == 0;
  if (!poolcode) return false;
  const uint32_t lfanew = get_u32(page, 0x3c);
  return lfanew <= 0x1000 - 0x18 && std::memcmp(page.data() + lfanew, "PE\0\0", 4) == 0 &&
         (page[lfanew + 4] | (page[lfanew + 5] << 8)) == 0x8664;
}

// ntoskrnl.exe and its multiprocessor / PAE builds.
bool is_kernel_name(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name == "ntoskrnl.exe" || name == "ntkrnlmp.exe" || name == "ntkrnlpa.exe" || name == "ntkrpamp.exe";
}

}  // namespace

uint64_t decode_kdbg_qword(uint64_t encoded, uint64_t wait_never, uint64_t wait_always,
                           uint64_t block_encoded_address) {
  return wait_always ^ __builtin_bswap64(block_encoded_address ^ rol(encoded ^ wait_never, wait_never & 63));
}

size_t kernel::read(uint64_t dtb, uint64_t va, std::span<uint8_t> out) const {
  if (memory_.physical) {
    auto n = paging::read_virtual(dtb != 0 ? dtb : dtb_, va, out, exact_reader(memory_));
    return n.ok() ? *n : 0;
  }
  return memory_.current_virtual ? memory_.current_virtual(va, out) : 0;
}

std::optional<uint64_t> kernel::read_u64(uint64_t va, uint64_t dtb) const {
  uint64_t v = 0;
  if (read(dtb, va, std::span(reinterpret_cast<uint8_t*>(&v), 8)) != 8) return std::nullopt;
  return v;
}

std::optional<uint32_t> kernel::read_u32(uint64_t va, uint64_t dtb) const {
  uint32_t v = 0;
  if (read(dtb, va, std::span(reinterpret_cast<uint8_t*>(&v), 4)) != 4) return std::nullopt;
  return v;
}

std::string kernel::first_module_name(uint64_t module_list) const {
  if (module_list == 0) return "";
  auto first = read_u64(module_list);
  return first ? unicode_string(*first + layout_.ldr_base_name) : "";
}

std::string kernel::unicode_string(uint64_t va, uint64_t dtb) const {
  std::vector<uint8_t> us(16);
  if (read(dtb, va, us) != 16) return "";
  const uint16_t length = static_cast<uint16_t>(std::min<uint32_t>(get_u32(us, 0) & 0xfffe, 1024));
  const uint64_t buffer = get_u64(us, 8);
  std::vector<uint8_t> raw(length);
  if (length == 0 || read(dtb, buffer, raw) != raw.size()) return "";
  return toolhost::text::utf16le_to_utf8(raw);
}

absl::StatusOr<kernel> kernel::discover(const memory_access& memory, const hints& h) {
  kernel k;
  k.memory_ = memory;
  k.hints_ = h;
  // The kernel's directory table: the backend's, else the scan.
  if (h.dtb != 0) {
    k.dtb_ = paging::cr3_table(h.dtb);
    k.how_ = h.source;
  } else if (h.cr3 != 0 && memory.physical && self_map_of(memory, paging::cr3_table(h.cr3)) >= 0 &&
             maps_kuser(memory, paging::cr3_table(h.cr3))) {
    k.dtb_ = paging::cr3_table(h.cr3);
    k.how_ = "the vCPU's CR3";
  } else if (memory.physical) {
    for (uint64_t p = kScanStart; p < kScanEnd && k.dtb_ == 0; p += 0x1000) {
      const int self = self_map_of(memory, p);
      if (self >= 0 && maps_kuser(memory, p)) k.dtb_ = p;
    }
    if (k.dtb_ == 0) {
      return absl::NotFoundError(
          "no page in the first 16 MiB of physical memory is a Windows directory table "
          "(a PML4 that maps itself and KUSER_SHARED_DATA)");
    }
    k.how_ = "directory-table scan";
  } else {
    return absl::NotFoundError("the backend names no directory table and has no physical memory to scan");
  }
  k.self_map_ = memory.physical ? self_map_of(memory, k.dtb_) : -1;

  // The kernel image: the backend's base, the first loaded module, else the image scan.
  if (h.kernel_base != 0) {
    k.kernel_base_ = h.kernel_base;
  } else if (h.module_list != 0) {
    if (auto first = k.read_u64(h.module_list)) {
      if (auto base = k.read_u64(*first + k.layout_.ldr_dll_base)) k.kernel_base_ = *base;
    }
  }
  if (k.kernel_base_ == 0 && memory.physical) {
    // Walk the kernel's window through the tables (4 KiB, 2 MiB and 1 GiB leaves).
    auto phys = exact_reader(memory);
    std::vector<uint8_t> page(0x1000);
    for (uint64_t va = kKernelLow; va < kKernelHigh && k.kernel_base_ == 0;) {
      auto t = paging::translate(k.dtb_, va, phys);
      if (!t.ok()) {
        // Skip what the missing level covers.
        uint64_t step = 0x1000;
        const std::string why(t.status().message());
        if (why.find("PML4E") != std::string::npos)
          step = 1ull << 39;
        else if (why.find("PDPTE") != std::string::npos)
          step = 1ull << 30;
        else if (why.find("PDE") != std::string::npos)
          step = 1ull << 21;
        va = (va & ~(step - 1)) + step;
        continue;
      }
      if (!t->user && t->no_execute && memory.physical(t->physical, page) == page.size() && is_kernel_header(page)) {
        k.kernel_base_ = va;
        break;
      }
      va += 0x1000;
    }
    if (k.kernel_base_ != 0) k.how_ += ", kernel-image scan";
  }
  if (k.kernel_base_ == 0)
    return absl::NotFoundError("no Windows kernel image (MZ with a POOLCODE section) is mapped in the kernel's window");
  std::vector<uint8_t> header(0x1000);
  const bool header_read = k.read(0, k.kernel_base_, header) == header.size();
  // The image there must be ntoskrnl: its header (POOLCODE), else, when that page is paged out,
  // the loader entry's name. Anything else (a driver first in a test's module list, a KD target
  // that is not Windows) leaves the target a plain one.
  if (header_read ? !is_kernel_header(header) : !is_kernel_name(k.first_module_name(h.module_list))) {
    return absl::NotFoundError(
        absl::StrFormat("the image at %016x is not a Windows kernel (no POOLCODE section)", k.kernel_base_));
  }
  if (header_read) {
    const uint32_t lfanew = get_u32(header, 0x3c);
    if (lfanew + 0x60 < header.size()) k.kernel_size_ = get_u32(header, lfanew + 24 + 56);
  }
  // The build from KUSER_SHARED_DATA.
  std::vector<uint8_t> kuser(0x280);
  if (k.read(0, kKuserSharedData, kuser) == kuser.size()) {
    k.build_ = get_u32(kuser, kKuserNtBuildNumber) & 0xffff;
    k.major_ = get_u32(kuser, kKuserNtMajorVersion);
    k.minor_ = get_u32(kuser, kKuserNtMinorVersion);
  } else {
    k.notes_.push_back("KUSER_SHARED_DATA is not readable, so the build is not known");
  }
  k.module_list_ = h.module_list;
  k.active_process_head_ = h.active_process_head;
  k.layout_ = layout_from(nullptr);
  return k;
}

bool kernel::valid_kdbg(uint64_t va, std::vector<uint8_t>& block) {
  block.assign(0x20, 0);
  if (read(0, va, block) != block.size()) return false;
  const uint32_t size = get_u32(block, kdbg::kSizeOffset);
  if (get_u32(block, kdbg::kOwnerTagOffset) != kdbg::kOwnerTag || size < 0x20 || size > kdbg::kMaxSize) return false;
  if (get_u64(block, kdbg::kKernBase) != kernel_base_) return false;
  block.assign(size, 0);
  return read(0, va, block) == block.size();
}

void kernel::attach_symbols(const nt_symbols& nt) {
  layout_ = layout_from(nt.types);
  auto address = [&](std::string_view name) -> uint64_t {
    if (!nt.address) return 0;
    return nt.address(name).value_or(0);
  };
  if (const uint64_t a = address("PsLoadedModuleList")) module_list_ = a;
  if (const uint64_t a = address("PsActiveProcessHead")) active_process_head_ = a;
  if (const uint64_t a = address("PsInitialSystemProcess")) initial_process_ = read_u64(a).value_or(0);
  if (const uint64_t a = address("KiProcessorBlock")) processor_block_ = a;
  number_processors_ = address("KeNumberProcessors");

  // The KDBG: the backend's, the PDB's KdDebuggerDataBlock, the list head's first entry.
  std::vector<uint64_t> candidates;
  if (hints_.kdbg_list != 0) {
    if (auto flink = read_u64(hints_.kdbg_list)) candidates.push_back(*flink);
  }
  if (hints_.kdbg != 0) candidates.push_back(hints_.kdbg);
  if (const uint64_t a = address("KdDebuggerDataBlock")) candidates.push_back(a);
  if (const uint64_t a = address("KdpDebuggerDataListHead")) {
    if (auto flink = read_u64(a); flink && *flink != a) candidates.push_back(*flink);
  }
  std::vector<uint8_t> block;
  for (uint64_t c : candidates) {
    if (c == 0 || !valid_kdbg(c, block)) continue;
    kdbg_ = c;
    break;
  }
  // Encoded (Windows 8 and later, booted without /debug): KdCopyDataBlock's transform with
  // nt!KiWaitNever, nt!KiWaitAlways and the address of nt!KdpDataBlockEncoded.
  const uint64_t never_at = address("KiWaitNever"), always_at = address("KiWaitAlways"),
                 flag_at = address("KdpDataBlockEncoded");
  if (kdbg_ == 0 && never_at != 0 && always_at != 0 && flag_at != 0) {
    const auto never = read_u64(never_at), always = read_u64(always_at);
    for (uint64_t c : candidates) {
      if (c == 0 || !never || !always) break;
      std::vector<uint8_t> head(0x20);
      if (read(0, c, head) != head.size()) continue;
      const uint64_t tag_and_size = decode_kdbg_qword(get_u64(head, 0x10), *never, *always, flag_at);
      const uint32_t size = static_cast<uint32_t>(tag_and_size >> 32);
      if (static_cast<uint32_t>(tag_and_size) != kdbg::kOwnerTag || size < 0x20 || size > kdbg::kMaxSize) continue;
      std::vector<uint8_t> raw(size & ~7u);
      if (read(0, c, raw) != raw.size()) continue;
      for (size_t i = 0; i + 8 <= raw.size(); i += 8) {
        uint64_t q;
        std::memcpy(&q, raw.data() + i, 8);
        q = decode_kdbg_qword(q, *never, *always, flag_at);
        std::memcpy(raw.data() + i, &q, 8);
      }
      if (get_u64(raw, kdbg::kKernBase) != kernel_base_) continue;
      kdbg_ = c;
      kdbg_encoded_ = true;
      block = std::move(raw);
      break;
    }
  }
  if (kdbg_ != 0) {
    if (module_list_ == 0) module_list_ = get_u64(block, kdbg::kPsLoadedModuleList);
    if (active_process_head_ == 0) active_process_head_ = get_u64(block, kdbg::kPsActiveProcessHead);
    if (processor_block_ == 0) processor_block_ = get_u64(block, kdbg::kKiProcessorBlock);
  } else {
    notes_.push_back(candidates.empty() ? "no KDBG is known (no hint, no PDB symbol)" : "no candidate KDBG validates");
  }
}

absl::StatusOr<process> kernel::process_at(uint64_t eprocess) const {
  const nt_layout& l = layout_;
  std::vector<uint8_t> b(std::max<uint64_t>(l.eprocess_size, l.vad_root + 8));
  if (read(0, eprocess, b) < l.image_file_name + 15) {
    return absl::NotFoundError(absl::StrFormat("the _EPROCESS at %016x is not readable", eprocess));
  }
  process p;
  p.eprocess = eprocess;
  p.dtb = get_u64(b, l.process_dtb) & ~0xfffull;
  p.user_dtb = get_u64(b, l.process_user_dtb) & ~0xfffull;
  p.pid = get_u64(b, l.unique_process_id);
  p.parent_pid = get_u64(b, l.parent_pid);
  p.peb = get_u64(b, l.peb);
  p.session = get_u64(b, l.session);
  p.object_table = get_u64(b, l.object_table);
  p.token = get_u64(b, l.token) & ~0xfull;  // EX_FAST_REF: the low bits are a reference count
  p.vad_root = get_u64(b, l.vad_root);
  p.create_time = static_cast<int64_t>(get_u64(b, l.create_time));
  p.active_threads = get_u32(b, l.active_threads);
  for (size_t i = 0; i < 15 && b[l.image_file_name + i] != 0; ++i)
    p.image += static_cast<char>(b[l.image_file_name + i]);
  // _MM_SESSION_SPACE.SessionId sits 8 bytes in.
  if (p.session != 0) {
    if (auto id = read_u32(p.session + 8)) p.session_id = *id;
  }
  return p;
}

absl::StatusOr<std::vector<process>> kernel::processes() const {
  uint64_t head = active_process_head_;
  uint64_t first = 0;
  if (head == 0) {
    if (initial_process_ == 0)
      return absl::NotFoundError(
          "neither PsActiveProcessHead nor PsInitialSystemProcess is known (load nt's PDB: .reload /f nt)");
    head = initial_process_ + layout_.active_process_links;  // walk from System's own link
    first = initial_process_;
  }
  std::vector<process> out;
  std::set<uint64_t> seen;
  if (first != 0) {
    auto p = process_at(first);
    if (!p.ok()) return p.status();
    out.push_back(*p);
    seen.insert(first);
  }
  auto flink = read_u64(head);
  if (!flink) return absl::NotFoundError(absl::StrFormat("the process list head at %016x is not readable", head));
  for (uint64_t link = *flink; link != 0 && link != head && out.size() < kMaxProcesses;) {
    const uint64_t eprocess = link - layout_.active_process_links;
    if (!seen.insert(eprocess).second) break;
    auto p = process_at(eprocess);
    if (!p.ok()) break;
    out.push_back(*p);
    auto next = read_u64(link);
    if (!next) break;
    link = *next;
  }
  return out;
}

absl::StatusOr<thread> kernel::thread_at(uint64_t ethread) const {
  const nt_layout& l = layout_;
  const uint64_t span =
      std::max({l.ethread_thread_list_entry + 16, l.ethread_cid + 16, l.ethread_win32_start_address + 8,
                l.kthread_user_time + 4, l.kthread_thread_list_entry + 16});
  std::vector<uint8_t> b(span);
  if (read(0, ethread, b) != b.size())
    return absl::NotFoundError(absl::StrFormat("the _ETHREAD at %016x is not readable", ethread));
  thread t;
  t.ethread = ethread;
  t.process = get_u64(b, l.kthread_process);
  t.pid = get_u64(b, l.ethread_cid);
  t.tid = get_u64(b, l.ethread_cid + 8);
  t.teb = get_u64(b, l.kthread_teb);
  t.win32thread = get_u64(b, l.kthread_win32thread);
  t.start = get_u64(b, l.ethread_start_address);
  t.win32_start = get_u64(b, l.ethread_win32_start_address);
  t.initial_stack = get_u64(b, l.kthread_initial_stack);
  t.stack_base = get_u64(b, l.kthread_stack_base);
  t.stack_limit = get_u64(b, l.kthread_stack_limit);
  t.kernel_stack = get_u64(b, l.kthread_kernel_stack);
  t.trap_frame = get_u64(b, l.kthread_trap_frame);
  t.state = get_u8(b, l.kthread_state);
  t.wait_reason = get_u8(b, l.kthread_wait_reason);
  t.wait_mode = get_u8(b, l.kthread_wait_mode);
  t.wait_irql = get_u8(b, l.kthread_wait_irql);
  t.priority = static_cast<int8_t>(get_u8(b, l.kthread_priority));
  t.base_priority = static_cast<int8_t>(get_u8(b, l.kthread_base_priority));
  t.kernel_time = get_u32(b, l.kthread_kernel_time);
  t.user_time = get_u32(b, l.kthread_user_time);
  return t;
}

std::vector<thread> kernel::threads(const process& p) const {
  std::vector<thread> out;
  const uint64_t head = p.eprocess + layout_.thread_list_head;
  auto flink = read_u64(head);
  std::set<uint64_t> seen;
  for (uint64_t link = flink.value_or(0); link != 0 && link != head && out.size() < kMaxThreads;) {
    const uint64_t ethread = link - layout_.ethread_thread_list_entry;
    if (!seen.insert(ethread).second) break;
    auto t = thread_at(ethread);
    if (!t.ok()) break;
    out.push_back(*t);
    auto next = read_u64(link);
    if (!next) break;
    link = *next;
  }
  return out;
}

absl::StatusOr<std::vector<loaded_module>> kernel::kernel_modules() const {
  if (module_list_ == 0) return absl::NotFoundError("PsLoadedModuleList is not known (load nt's PDB: .reload /f nt)");
  std::vector<loaded_module> out;
  auto flink = read_u64(module_list_);
  if (!flink) return absl::NotFoundError(absl::StrFormat("PsLoadedModuleList at %016x is not readable", module_list_));
  std::set<uint64_t> seen;
  for (uint64_t entry = *flink; entry != 0 && entry != module_list_ && out.size() < kMaxModules;) {
    if (!seen.insert(entry).second) break;
    std::vector<uint8_t> e(std::max<uint64_t>(layout_.kldr_timestamp + 4, layout_.ldr_base_name + 16));
    if (read(0, entry, e) != e.size()) break;
    loaded_module m;
    m.base = get_u64(e, layout_.ldr_dll_base);
    m.size = get_u32(e, layout_.ldr_size);
    m.checksum = get_u32(e, layout_.kldr_checksum);
    m.timestamp = get_u32(e, layout_.kldr_timestamp);
    m.path = unicode_string(entry + layout_.ldr_full_name);
    m.name = unicode_string(entry + layout_.ldr_base_name);
    if (m.base != 0) out.push_back(std::move(m));
    entry = get_u64(e, 0);
  }
  return out;
}

absl::StatusOr<std::vector<loaded_module>> kernel::user_modules(const process& p) const {
  if (p.peb == 0) return std::vector<loaded_module>();
  auto ldr = read_u64(p.peb + layout_.peb_ldr, p.dtb);
  if (!ldr)
    return absl::NotFoundError(absl::StrFormat("the PEB of %s at %016x is not readable (paged out?)", p.image, p.peb));
  std::vector<loaded_module> out;
  if (*ldr == 0) return out;
  const uint64_t head = *ldr + layout_.ldr_in_load_order;
  auto flink = read_u64(head, p.dtb);
  std::set<uint64_t> seen;
  for (uint64_t entry = flink.value_or(0); entry != 0 && entry != head && out.size() < kMaxModules;) {
    if (!seen.insert(entry).second) break;
    std::vector<uint8_t> e(std::max<uint64_t>(layout_.ldr_timestamp + 4, layout_.ldr_base_name + 16));
    if (read(p.dtb, entry, e) != e.size()) break;
    loaded_module m;
    m.base = get_u64(e, layout_.ldr_dll_base);
    m.size = get_u32(e, layout_.ldr_size);
    m.timestamp = get_u32(e, layout_.ldr_timestamp);
    m.path = unicode_string(entry + layout_.ldr_full_name, p.dtb);
    m.name = unicode_string(entry + layout_.ldr_base_name, p.dtb);
    if (m.base != 0) out.push_back(std::move(m));
    entry = get_u64(e, 0);
  }
  return out;
}

uint64_t kernel::current_thread(uint32_t processor) const {
  if (processor_block_ == 0 || processor >= 2048) return 0;
  auto prcb = read_u64(processor_block_ + processor * 8ull);
  if (!prcb || *prcb == 0) return 0;
  return read_u64(*prcb + layout_.prcb_current_thread).value_or(0);
}

std::optional<uint32_t> kernel::processor_count() const {
  if (number_processors_ == 0) return std::nullopt;
  auto n = read_u32(number_processors_);
  if (!n || *n == 0 || *n > 2048) return std::nullopt;
  return *n;
}

std::optional<uint32_t> kernel::handle_count(const process& p) const {
  if (p.object_table == 0) return std::nullopt;
  // _HANDLE_TABLE.TableCode: the low two bits are the levels; a level-0 table is one page of
  // 16-byte entries (the first is not a handle), a level-1 table a page of pointers to those.
  auto code = read_u64(p.object_table + 8);
  if (!code) return std::nullopt;
  const uint64_t levels = *code & 3, table = *code & ~3ull;
  auto count_page = [&](uint64_t page) -> std::optional<uint32_t> {
    std::vector<uint8_t> entries(0x1000);
    if (read(0, page, entries) != entries.size()) return std::nullopt;
    uint32_t n = 0;
    for (size_t i = 16; i < entries.size(); i += 16) n += get_u64(entries, i) != 0;
    return n;
  };
  if (levels == 0) return count_page(table);
  if (levels != 1) return std::nullopt;
  std::vector<uint8_t> pointers(0x1000);
  if (read(0, table, pointers) != pointers.size()) return std::nullopt;
  uint32_t total = 0;
  for (size_t i = 0; i < pointers.size(); i += 8) {
    const uint64_t page = get_u64(pointers, i);
    if (page == 0) break;
    auto n = count_page(page);
    if (!n) return std::nullopt;
    total += *n;
  }
  return total;
}

}  // namespace toolhost::debugger::windows
