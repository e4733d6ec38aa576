#include "windows_system.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "oracle.hpp"

namespace toolhost::test::windows {

namespace {

// The 19041 offsets the test writes at (nt_types.h holds the same, checked at compile time).
constexpr uint64_t kEpDirBase = 0x28, kEpPid = 0x440, kEpLinks = 0x448, kEpParent = 0x540, kEpPeb = 0x550,
                   kEpSession = 0x558, kEpObjectTable = 0x570, kEpImage = 0x5a8, kEpThreads = 0x5e0,
                   kEpActiveThreads = 0x5f0, kEpSize = 0xa40;
constexpr uint64_t kKtState = 0x184, kKtWaitReason = 0x283, kKtTeb = 0xf0, kKtProcess = 0x220, kKtApcProcess = 0xb8,
                   kKtStackBase = 0x38, kKtStackLimit = 0x30, kKtInitialStack = 0x28, kKtKernelStack = 0x58,
                   kKtPriority = 0xc3, kKtBasePriority = 0x233;
constexpr uint64_t kEtCid = 0x478, kEtThreadListEntry = 0x4e8, kEtStart = 0x450, kEtWin32Start = 0x4d0, kEtSize = 0x898;
constexpr uint64_t kPebImageBase = 0x10, kPebLdr = 0x18, kLdrInLoadOrder = 0x10;

std::map<std::string, uint32_t> nt_rvas() {
  std::map<std::string, uint32_t> out;
  const std::string pdb = fixture("ntkrnlmp.pdb");
  const auto sections = section_addresses(pdb);
  for (const char* option : {"-publics", "-globals"}) {
    for (const auto& s : pdb_symbols(pdb, option)) {
      if (s.segment != 0 && !s.name.empty()) out[s.name] = static_cast<uint32_t>(sections.at(s.segment - 1) + s.offset);
    }
  }
  return out;
}

uint64_t ror(uint64_t v, unsigned n) { return n == 0 ? v : (v >> n) | (v << (64 - n)); }

}  // namespace

uint64_t windows_system::nt_symbol(const std::string& name) const {
  static const std::map<std::string, uint32_t> rvas = nt_rvas();
  auto it = rvas.find(name);
  if (it == rvas.end()) throw std::runtime_error("ntkrnlmp.pdb has no " + name);
  return kNtBase + it->second;
}

windows_system::windows_system(bool encoded) {
  kernel_memory& k = memory;
  modules = {{fixture("ntoskrnl.exe"), kNtBase, "ntoskrnl.exe", "\\SystemRoot\\system32\\ntoskrnl.exe"},
             {fixture("wsfix.sys"), kFixBase, "wsfix.sys", "\\SystemRoot\\system32\\drivers\\wsfix.sys"},
             {fixture("wsdrv.sys"), kDrvBase, "wsdrv.sys", "\\SystemRoot\\system32\\drivers\\wsdrv.sys"}};
  for (auto& m : modules) k.load_image(m);
  module_list = nt_symbol("PsLoadedModuleList");
  active_process_head = nt_symbol("PsActiveProcessHead");
  k.module_list(module_list, kPool + 0x100000, modules);

  // KUSER_SHARED_DATA: kernel-only, no-execute; the build Windows 10 2004 reports.
  k.map(0xfffff78000000000, 0x1000, kWritablePage | kNoExecutePage);
  k.put<uint32_t>(0xfffff78000000000 + 0x260, kBuild);
  k.put<uint32_t>(0xfffff78000000000 + 0x26c, 10);
  k.put<uint32_t>(0xfffff78000000000 + 0x270, 0);
  k.put<uint16_t>(0xfffff78000000000 + 0x2c, 0x8664);

  // Processes: System and three user processes, each with two threads.
  struct spec {
    const char* image;
    uint64_t pid, parent;
    uint8_t fill;
    std::vector<std::string> dlls;
  };
  const std::vector<spec> specs = {{"System", 4, 0, 0x00, {}},
                                   {"smss.exe", 0x1f8, 4, 0x51, {"smss.exe", "ntdll.dll"}},
                                   {"csrss.exe", 0x280, 0x1f8, 0x52, {"csrss.exe", "ntdll.dll", "csrsrv.dll"}},
                                   {"notepad.exe", 0x1a2c, 0x280, 0x53, {"notepad.exe", "ntdll.dll", "kernel32.dll"}}};
  k.map(kPool, 0x100000);
  uint64_t pool = kPool;
  auto carve = [&](uint64_t size) {
    const uint64_t at = pool;
    pool += (size + 0xfff) & ~0xfffull;
    return at;
  };
  uint64_t tid = 0x10;
  for (const spec& s : specs) {
    system_process p;
    p.image = s.image;
    p.pid = s.pid;
    p.parent = s.parent;
    p.fill = s.fill;
    p.eprocess = carve(kEpSize);
    p.dtb = processes.empty() ? kernel_memory::kDtb : k.new_address_space();
    k.put<uint64_t>(p.eprocess + kEpDirBase, p.dtb);
    k.put<uint64_t>(p.eprocess + kEpPid, p.pid);
    k.put<uint64_t>(p.eprocess + kEpParent, p.parent);
    k.write(p.eprocess + kEpImage, p.image.c_str(), p.image.size());
    // Handles: a level-0 table with a few entries in use.
    p.object_table = carve(0x80);
    const uint64_t table = carve(0x1000);
    p.handles = 3 + static_cast<uint32_t>(processes.size());
    for (uint32_t h = 1; h <= p.handles; ++h) k.put<uint64_t>(table + h * 16, 0xffffa00100000000 + h);
    k.put<uint64_t>(p.object_table + 8, table);
    k.put<uint64_t>(p.eprocess + kEpObjectTable, p.object_table);
    if (p.pid != 4) {
      p.session_id = p.pid == 0x1a2c ? 1 : 0;
      const uint64_t session = carve(0x100);
      k.put<uint32_t>(session + 8, p.session_id);
      k.put<uint64_t>(p.eprocess + kEpSession, session);
      // User memory of this process only, and its PEB with the loader's list.
      p.user_page = kUserData;
      k.map(p.user_page, 0x1000, kWritablePage | kUserPage, p.dtb);
      std::vector<uint8_t> bytes(0x1000, p.fill);
      k.write(p.user_page, bytes.data(), bytes.size(), p.dtb);
      p.peb = kPebBase;
      k.map(p.peb, 0x3000, kWritablePage | kUserPage, p.dtb);
      const uint64_t ldr = p.peb + 0x1000, entries = p.peb + 0x2000;
      k.put<uint64_t>(p.peb + kPebImageBase, 0x00007ff600000000, p.dtb);
      k.put<uint64_t>(p.peb + kPebLdr, ldr, p.dtb);
      const uint64_t head = ldr + kLdrInLoadOrder;
      for (size_t i = 0; i < s.dlls.size(); ++i) {
        const uint64_t e = entries + i * 0x180;
        k.put<uint64_t>(e, i + 1 < s.dlls.size() ? e + 0x180 : head, p.dtb);
        k.put<uint64_t>(e + 8, i > 0 ? e - 0x180 : head, p.dtb);
        k.put<uint64_t>(e + 0x30, 0x00007ff600000000 + i * 0x100000, p.dtb);
        k.put<uint32_t>(e + 0x40, 0x80000, p.dtb);
        k.put_unicode_string(e + 0x48, e + 0x120, "C:\\Windows\\System32\\" + s.dlls[i], p.dtb);
        k.put_unicode_string(e + 0x58, e + 0x160, s.dlls[i], p.dtb);
        p.user_modules.push_back(s.dlls[i]);
      }
      k.put<uint64_t>(head, entries, p.dtb);
      k.put<uint64_t>(head + 8, entries + (s.dlls.size() - 1) * 0x180, p.dtb);
      k.put<uint64_t>(p.eprocess + kEpPeb, p.peb);
    }
    // Two threads.
    const uint64_t thread_head = p.eprocess + kEpThreads;
    for (int i = 0; i < 2; ++i) {
      system_thread t;
      t.ethread = carve(kEtSize);
      t.tid = tid += 4;
      t.teb = p.pid == 4 ? 0 : 0x000000e3a5d50000 + i * 0x2000;
      t.state = i == 0 ? 5 : 1;  // Waiting, Ready
      t.wait_reason = i == 0 ? 6 : 0;
      const uint64_t stack = carve(0x6000);
      k.put<uint64_t>(t.ethread + kEtCid, p.pid);
      k.put<uint64_t>(t.ethread + kEtCid + 8, t.tid);
      k.put<uint64_t>(t.ethread + kKtTeb, t.teb);
      k.put<uint8_t>(t.ethread + kKtState, t.state);
      k.put<uint8_t>(t.ethread + kKtWaitReason, t.wait_reason);
      k.put<uint8_t>(t.ethread + kKtPriority, 8);
      k.put<uint8_t>(t.ethread + kKtBasePriority, 8);
      k.put<uint64_t>(t.ethread + kKtProcess, p.eprocess);
      k.put<uint64_t>(t.ethread + kKtApcProcess, p.eprocess);
      k.put<uint64_t>(t.ethread + kKtInitialStack, stack + 0x6000);
      k.put<uint64_t>(t.ethread + kKtStackBase, stack + 0x6000);
      k.put<uint64_t>(t.ethread + kKtStackLimit, stack);
      k.put<uint64_t>(t.ethread + kKtKernelStack, stack + 0x5000);
      k.put<uint64_t>(t.ethread + kEtStart, nt_symbol("KiSystemStartup"));
      k.put<uint64_t>(t.ethread + kEtWin32Start, nt_symbol("NtCreateFile"));
      p.threads.push_back(t);
    }
    for (size_t i = 0; i < p.threads.size(); ++i) {
      const uint64_t link = p.threads[i].ethread + kEtThreadListEntry;
      k.put<uint64_t>(link, i + 1 < p.threads.size() ? p.threads[i + 1].ethread + kEtThreadListEntry : thread_head);
      k.put<uint64_t>(link + 8, i > 0 ? p.threads[i - 1].ethread + kEtThreadListEntry : thread_head);
    }
    k.put<uint64_t>(thread_head, p.threads.front().ethread + kEtThreadListEntry);
    k.put<uint64_t>(thread_head + 8, p.threads.back().ethread + kEtThreadListEntry);
    k.put<uint32_t>(p.eprocess + kEpActiveThreads, 2);
    processes.push_back(std::move(p));
  }
  for (size_t i = 0; i < processes.size(); ++i) {
    const uint64_t link = processes[i].eprocess + kEpLinks;
    k.put<uint64_t>(link, i + 1 < processes.size() ? processes[i + 1].eprocess + kEpLinks : active_process_head);
    k.put<uint64_t>(link + 8, i > 0 ? processes[i - 1].eprocess + kEpLinks : active_process_head);
  }
  k.put<uint64_t>(active_process_head, processes.front().eprocess + kEpLinks);
  k.put<uint64_t>(active_process_head + 8, processes.back().eprocess + kEpLinks);
  k.put<uint64_t>(nt_symbol("PsInitialSystemProcess"), processes.front().eprocess);

  // Two processors, each a KPCR with the PRCB inside: notepad's first thread runs on 0 (the
  // dump's register context), csrss's second on 1 (a processor the dump has no context for).
  kiprocessor_block = nt_symbol("KiProcessorBlock");
  running_threads = {processes.back().threads.front().ethread, processes[2].threads.back().ethread};
  for (size_t n = 0; n < running_threads.size(); ++n) {
    const uint64_t kpcr = carve(0x1000);
    const uint64_t block = kpcr + 0x180;
    k.put<uint64_t>(kpcr + 0x18, kpcr);
    k.put<uint64_t>(kpcr + 0x20, block);
    k.put<uint64_t>(block + 0x8, running_threads[n]);
    k.put<uint8_t>(running_threads[n] + kKtState, 2);  // Running
    k.put<uint64_t>(kiprocessor_block + n * 8, block);
    if (n == 0) prcb = block;
  }
  current_thread = running_threads.front();
  for (auto& p : processes) {
    for (auto& t : p.threads) {
      if (std::find(running_threads.begin(), running_threads.end(), t.ethread) != running_threads.end()) t.state = 2;
    }
  }
  k.put<uint32_t>(nt_symbol("KeNumberProcessors"), static_cast<uint32_t>(running_threads.size()));

  // Large pages (physical frames above the 4 KiB pages' region) and not-present PTEs: a page
  // in transition (frame 0x1234, ReadWrite) and one in page file 2 at offset 0x4567 (ExecuteRead).
  k.map_large(kLarge2m, 0x80200000, 1ull << 21);
  k.map_large(kLarge1g, 0x40000000, 1ull << 30);
  k.put<uint64_t>(kLarge2m + 0x1238, kLargeMark);
  k.put<uint64_t>(kLarge1g + 0x1238, kLargeMark);
  k.map(kTransitionPage, 0x2000);
  transition_pte = (0x1234ull << 12) | 0x800 | (4 << 5);
  paged_out_pte = (0x4567ull << 32) | (2 << 1) | (3 << 5);
  k.set_pte(kTransitionPage, transition_pte);
  k.set_pte(kPagedOutPage, paged_out_pte);

  // The KDBG, plain or encoded with KdCopyDataBlock's inverse.
  kdbg = nt_symbol("KdDebuggerDataBlock");
  std::vector<uint64_t> block(0x368 / 8, 0);
  block[0x10 / 8] = (uint64_t{0x368} << 32) | 0x4742444B;
  block[0x18 / 8] = kNtBase;
  block[0x48 / 8] = module_list;
  block[0x50 / 8] = active_process_head;
  block[0x218 / 8] = kiprocessor_block;
  kdbg_encoded = encoded;
  if (encoded) {
    const uint64_t never = 0x8642097531FEDCBAull, always = 0x0F1E2D3C4B5A6978ull;
    const uint64_t flag = nt_symbol("KdpDataBlockEncoded");
    k.put<uint64_t>(nt_symbol("KiWaitNever"), never);
    k.put<uint64_t>(nt_symbol("KiWaitAlways"), always);
    k.put<uint8_t>(flag, 1);
    for (uint64_t& q : block) q = never ^ ror(flag ^ __builtin_bswap64(always ^ q), never & 63);
  }
  k.write(kdbg, block.data(), block.size() * 8);
}

std::string windows_system::write_dump(const std::string& name, bool header_hints) const {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("toolhost-windows-" + std::to_string(getpid()) + "-" + name)).string();
  kernel_memory::dump_header h;
  if (header_hints) {
    h.module_list_head = module_list;
    h.active_process_head = active_process_head;
    h.kd_debugger_data_block = kdbg;
  } else {
    h.dtb = 0;
  }
  h.rip = nt_symbol("NtCreateFile");
  if (!memory.write_dump(path, h).ok()) throw std::runtime_error("cannot write " + path);
  return path;
}

}  // namespace toolhost::test::windows
