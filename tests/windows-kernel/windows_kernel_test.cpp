// The Windows kernel model through the debugger, on crash dumps of a Windows 10 19041-shaped
// system (tests/windows-fixtures/windows_system.hpp) written with the project's dump writer:
// processes, scope, threads, modules with their PDBs, !pte / !vtop, the KDBG plain and encoded,
// discovery by scanning when the dump header names nothing.
#include <regex>

#include <absl/strings/str_format.h>

#include "debugger_session.hpp"
#include "oracle.hpp"
#include "windows_system.hpp"

namespace w = toolhost::test::windows;

namespace {

std::string addr(uint64_t v) { return absl::StrFormat("%08x`%08x", v >> 32, v & 0xffffffff); }

std::string trailer(const w::answer& a) { return a.text.substr(a.text.rfind("[target")); }

}  // namespace

TEST_CASE("!process 0 0 lists exactly the system's processes in WinDbg's layout", "[windows]") {
  const w::windows_system sys;
  const std::string dump = sys.write_dump("process.dmp");
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  auto opened = w::unpack(tools->open("dump", dump, ""));
  REQUIRE_FALSE(opened.error);

  auto all = w::run(*tools, "!process 0 0", "json");
  REQUIRE_FALSE(all.error);
  CHECK(all.text.rfind("**** NT ACTIVE PROCESS DUMP ****\n", 0) == 0);
  CHECK(std::count(all.text.begin(), all.text.end(), '\n') >= 5 * sys.processes.size());
  size_t shown = 0;
  for (const auto& p : sys.processes) {
    const std::string block = absl::StrFormat(
        "PROCESS %016x\n    SessionId: %s  Cid: %04x    Peb: %08x  ParentCid: %04x\n    DirBase: %08x  ObjectTable: "
        "%016x  "
        "HandleCount: %u.\n    Image: %s\n",
        p.eprocess, p.pid == 4 ? "none" : std::to_string(p.session_id), p.pid, p.peb, p.parent, p.dtb, p.object_table,
        p.handles, p.image);
    CHECK(all.text.find(block) != std::string::npos);
    shown += all.text.find(block) != std::string::npos;
  }
  CHECK(shown == sys.processes.size());
  CHECK(std::count(all.text.begin(), all.text.end(), 'P') >= 4);
  auto doc = all.json();
  REQUIRE(doc["result"]["processes"].Size() == sys.processes.size());
  CHECK(std::string(doc["result"]["processes"][3]["image"].GetString()) == "notepad.exe");
  CHECK(doc["target"]["kernel_base"].GetString() == absl::StrFormat("0x%x", w::windows_system::kNtBase));

  auto one = w::run(*tools, "!process 0 0 csrss.exe");
  CHECK(one.text.find("Image: csrss.exe") != std::string::npos);
  CHECK(one.text.find("Image: smss.exe") == std::string::npos);

  // The process the stopped vCPU runs, in the trailer and the JSON target.
  CHECK(trailer(one).find(" | process notepad.exe (6700)]") != std::string::npos);
  CHECK(std::string(doc["target"]["stopped_process"]["name"].GetString()) == "notepad.exe");
  CHECK(doc["target"]["stopped_thread"]["tid"].GetUint64() == sys.processes[3].threads[0].tid);
  std::filesystem::remove(dump);
}

TEST_CASE(".process /p reads that process's pages; the trailer shows the scope; .process 0 resets it", "[windows]") {
  const w::windows_system sys;
  const std::string dump = sys.write_dump("scope.dmp");
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  for (const auto& p : sys.processes) {
    if (p.user_page == 0) continue;
    auto set = w::run(*tools, ".process /p " + std::to_string(p.pid));
    REQUIRE_FALSE(set.error);
    CHECK(set.text.find("Implicit process is now " + addr(p.eprocess)) != std::string::npos);
    CHECK(trailer(set).find(absl::StrFormat(" | scope %s (%d)]", p.image, p.pid)) != std::string::npos);
    auto db = w::run(*tools, absl::StrFormat("db %x L8", p.user_page));
    const std::string bytes = absl::StrFormat("%02x %02x %02x %02x %02x %02x %02x %02x", p.fill, p.fill, p.fill, p.fill,
                                              p.fill, p.fill, p.fill, p.fill);
    CHECK(db.text.find(bytes) != std::string::npos);
    // Its PEB and loaded modules.
    auto peb = w::run(*tools, "!peb", "json");
    CHECK(peb.text.find(absl::StrFormat("PEB at %016x", p.peb)) != std::string::npos);
    for (const auto& dll : p.user_modules) CHECK(peb.text.find("C:\\Windows\\System32\\" + dll) != std::string::npos);
    auto lm = w::run(*tools, "lm");
    const std::string stem = p.user_modules.back().substr(0, p.user_modules.back().find('.'));
    CHECK(lm.text.find("   " + stem) != std::string::npos);
    // !vtop and !pte agree with the page tables the system was built with.
    const uint64_t pa = const_cast<w::kernel_memory&>(sys.memory).physical_of(p.user_page, p.dtb);
    auto vtop = w::run(*tools, absl::StrFormat("!vtop 0 %x", p.user_page));
    CHECK(vtop.text.find(absl::StrFormat("translates to physical address %x.", pa)) != std::string::npos);
    auto pte = w::run(*tools, absl::StrFormat("!pte %x", p.user_page), "json");
    CHECK(pte.text.find(absl::StrFormat("pfn %-10x", pa >> 12)) != std::string::npos);
    CHECK(pte.text.find("---------UW-V") == std::string::npos);
  }
  auto reset = w::run(*tools, ".process 0");
  CHECK(trailer(reset).find("| scope") == std::string::npos);
  // Another process's page is not this one's.
  auto plain = w::run(*tools, absl::StrFormat("db %x L8", sys.processes[1].user_page));
  CHECK(plain.text.find("51 51 51 51") == std::string::npos);
  CHECK(w::run(*tools, ".process /p 99999").error);
  std::filesystem::remove(dump);
}

TEST_CASE("modules with their PDBs, dt of an EPROCESS, !thread, vertarget", "[windows]") {
  const w::windows_system sys;
  const std::string dump = sys.write_dump("modules.dmp");
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  auto reload = w::run(*tools, ".reload /f");
  for (const char* m : {"nt ", "wsfix", "wsdrv"}) {
    CHECK(std::regex_search(reload.text, std::regex(std::string(m) + R"(\s+\(pdb symbols\)\s+\S+\.pdb)")));
  }
  CHECK(reload.text.find("ntkrnlmp.pdb") != std::string::npos);
  const auto& notepad = sys.processes[3];
  auto dt = w::run(*tools, absl::StrFormat("dt nt!_EPROCESS %x ImageFileName", notepad.eprocess));
  CHECK(dt.text.find("   +0x5a8 ImageFileName    : [15]  \"notepad.exe\"") != std::string::npos);
  for (const auto& p : sys.processes) {
    for (const auto& t : p.threads) {
      auto th = w::run(*tools, absl::StrFormat("!thread %x", t.ethread), "json");
      CHECK(th.text.find(absl::StrFormat("THREAD %016x  Cid %04x.%04x", t.ethread, p.pid, t.tid)) != std::string::npos);
      CHECK(th.text.find(absl::StrFormat("Owning Process            %016x       Image:         %s", p.eprocess,
                                         p.image)) != std::string::npos);
      CHECK(th.json()["result"]["tid"].GetUint64() == t.tid);
    }
  }
  auto current = w::run(*tools, "!thread");
  CHECK(current.text.find(absl::StrFormat("THREAD %016x", sys.current_thread)) != std::string::npos);
  auto all = w::run(*tools, "!process 0 7");
  CHECK(all.text.find(absl::StrFormat("THREAD %016x", sys.processes[2].threads[1].ethread)) != std::string::npos);
  auto version = w::run(*tools, "vertarget", "json");
  CHECK(version.text.find("Windows 10 Kernel Version 19041") != std::string::npos);
  CHECK(version.text.find("Kernel base = 0x" + addr(w::windows_system::kNtBase)) != std::string::npos);
  CHECK(version.text.find("KDBG at " + addr(sys.kdbg)) != std::string::npos);
  CHECK_FALSE(version.json()["result"]["kdbg_encoded"].GetBool());
  std::filesystem::remove(dump);
}

TEST_CASE("~ shows each processor's current thread; !thread names the processor it runs on", "[windows]") {
  const w::windows_system sys;
  const std::string dump = sys.write_dump("processors.dmp");
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  REQUIRE(sys.running_threads.size() == 2);
  auto list = w::run(*tools, "~", "json");
  REQUIRE_FALSE(list.error);
  auto doc = list.json();
  REQUIRE(doc["result"]["threads"].Size() == sys.running_threads.size());
  for (size_t n = 0; n < sys.running_threads.size(); ++n) {
    const w::system_process* owner = nullptr;
    const w::system_thread* thread = nullptr;
    for (const auto& p : sys.processes) {
      for (const auto& t : p.threads) {
        if (t.ethread == sys.running_threads[n]) owner = &p, thread = &t;
      }
    }
    REQUIRE(thread != nullptr);
    const std::string line =
        absl::StrFormat("%s%u  Processor %u  Thread %s  Cid %04x.%04x  Process %s  %s", n == 0 ? "." : " ", n, n,
                        addr(thread->ethread), owner->pid, thread->tid, addr(owner->eprocess), owner->image);
    INFO(list.text);
    CHECK(list.text.find(line) != std::string::npos);
    const auto& entry = doc["result"]["threads"][static_cast<rapidjson::SizeType>(n)];
    CHECK(entry["ethread"].GetString() == absl::StrFormat("0x%x", thread->ethread));
    CHECK(entry["tid"].GetUint64() == thread->tid);
    CHECK(std::string(entry["image"].GetString()) == owner->image);
    auto th = w::run(*tools, absl::StrFormat("!thread %x", thread->ethread));
    CHECK(th.text.find(absl::StrFormat("RUNNING on processor %u", n)) != std::string::npos);
  }
  // The dump has processor 0's registers only: processor 1 is listed, not selectable.
  CHECK(list.text.find("1  Processor 1") != std::string::npos);
  CHECK(list.text.find("(no register context from the dump backend)") != std::string::npos);
  CHECK(doc["result"]["threads"][1]["id"].IsNull());
  auto select = w::run(*tools, "~1s");
  CHECK(select.error);
  CHECK(select.text.find("processor 1 has no register context from the dump backend") != std::string::npos);
  CHECK_FALSE(w::run(*tools, "~0s").error);
  CHECK(w::run(*tools, "vertarget").text.find("Kernel Version 19041 MP (2 procs)") != std::string::npos);
  std::filesystem::remove(dump);
}

TEST_CASE("an encoded KDBG is decoded; a dump header naming nothing is found by the scans", "[windows]") {
  // KdCopyDataBlock's published test vectors.
  using toolhost::debugger::windows::decode_kdbg_qword;
  CHECK(decode_kdbg_qword(0x63ea9b7eb7acc15bull, 0x8642097531FEDCBAull, 0x0F1E2D3C4B5A6978ull, 0xFFFFF80312345678ull) ==
        0);
  CHECK(decode_kdbg_qword(0xb2fa0aa4b76cc149ull, 0x8642097531FEDCBAull, 0x0F1E2D3C4B5A6978ull, 0xFFFFF80312345678ull) ==
        0x000003684742444Bull);
  const w::windows_system encoded(true);
  const std::string dump = encoded.write_dump("encoded.dmp");
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  auto version = w::run(*tools, "vertarget", "json");
  CHECK(version.text.find("(encoded; decoded with KiWaitNever") != std::string::npos);
  CHECK(version.json()["result"]["kdbg_encoded"].GetBool());

  const std::string bare = encoded.write_dump("bare.dmp", false);
  auto scanned = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(scanned->open("dump", bare, "")).error);
  auto found = w::run(*scanned, "vertarget");
  CHECK(found.text.find("directory-table scan, kernel-image scan") != std::string::npos);
  CHECK(found.text.find("Kernel base = 0x" + addr(w::windows_system::kNtBase)) != std::string::npos);
  auto processes = w::run(*scanned, "!process 0 0");
  for (const auto& p : encoded.processes) CHECK(processes.text.find("Image: " + p.image) != std::string::npos);
  CHECK(w::run(*scanned, "lm").text.find("wsdrv") != std::string::npos);
  std::filesystem::remove(dump);
  std::filesystem::remove(bare);
}

TEST_CASE("!pte and !vtop on 4 KiB, 2 MiB and 1 GiB pages and on transition and paged-out PTEs", "[windows]") {
  w::windows_system sys;
  const std::string dump = sys.write_dump("pte.dmp");
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  struct page_case {
    uint64_t va;
    uint64_t size;
  };
  const uint64_t nt_va = w::windows_system::kNtBase + 0x1010;
  for (const page_case c : {page_case{nt_va, 0x1000}, page_case{w::windows_system::kLarge2m + 0x1238, 1ull << 21},
                            page_case{w::windows_system::kLarge1g + 0x1238, 1ull << 30}}) {
    const uint64_t pa = sys.memory.physical_of(c.va);
    REQUIRE(pa != 0);
    auto vtop = w::run(*tools, absl::StrFormat("!vtop 0 %x", c.va), "json");
    CHECK(vtop.text.find(absl::StrFormat("Virtual address %x translates to physical address %x.", c.va, pa)) !=
          std::string::npos);
    CHECK(vtop.json()["result"]["page_size"].GetString() == absl::StrFormat("0x%x", c.size));
    // The same with the directory base given.
    auto given = w::run(*tools, absl::StrFormat("!vtop %x %x", toolhost::test::windows::kernel_memory::kDtb, c.va));
    CHECK(given.text.find(absl::StrFormat("translates to physical address %x.", pa)) != std::string::npos);
    auto pte = w::run(*tools, absl::StrFormat("!pte %x", c.va), "json");
    CHECK(pte.text.find(absl::StrFormat("VA %016x", c.va)) != std::string::npos);
    auto entries = pte.json()["result"]["entries"].GetArray();
    CHECK(entries.Size() == (c.size == 0x1000 ? 4u : c.size == (1ull << 21) ? 3u : 2u));
    if (c.size != 0x1000) {
      CHECK(pte.text.find(absl::StrFormat("LARGE PAGE pfn %x", pa >> 12)) != std::string::npos);
      CHECK(entries[entries.Size() - 1]["large"].GetBool());
      // Memory reads go through the large leaf too.
      auto dq = w::run(*tools, absl::StrFormat("dq %x L1", c.va));
      CHECK(dq.text.find("11223344`55667788") != std::string::npos);
    } else {
      CHECK(pte.text.find(absl::StrFormat("pfn %-10x", pa >> 12)) != std::string::npos);
    }
    // PXE..PTE at the self-map addresses of index 0x1ed (PTE_BASE fffff680`00000000).
    const uint64_t pte_base = 0xfffff68000000000ull;
    const uint64_t pde_base = pte_base + (0x1edull << 30), ppe_base = pde_base + (0x1edull << 21),
                   pxe_base = ppe_base + (0x1edull << 12);
    const uint64_t va48 = c.va & 0xffffffffffffull;
    CHECK(pte.text.find(absl::StrFormat("PXE at %016X", pxe_base + ((va48 >> 39) << 3))) != std::string::npos);
    CHECK(pte.text.find(absl::StrFormat("PPE at %016X", ppe_base + ((va48 >> 30) << 3))) != std::string::npos);
  }
  auto transition = w::run(*tools, absl::StrFormat("!pte %x", w::windows_system::kTransitionPage), "json");
  CHECK(transition.text.find(absl::StrFormat("contains %016X", sys.transition_pte)) != std::string::npos);
  CHECK(transition.text.find("Transition: 1234") != std::string::npos);
  CHECK(transition.text.find("Protect: 4 - ReadWrite") != std::string::npos);
  CHECK(std::string(transition.json()["result"]["state"].GetString()) == "transition");
  auto paged = w::run(*tools, absl::StrFormat("!pte %x", w::windows_system::kPagedOutPage), "json");
  CHECK(paged.text.find("PageFile:  2") != std::string::npos);
  CHECK(paged.text.find("Offset: 4567") != std::string::npos);
  CHECK(paged.text.find("Protect: 3 - ExecuteRead") != std::string::npos);
  CHECK(std::string(paged.json()["result"]["state"].GetString()) == "paged out");
  auto fails = w::run(*tools, absl::StrFormat("!vtop 0 %x", w::windows_system::kPagedOutPage));
  CHECK(fails.text.find("translation fails") != std::string::npos);
  CHECK(w::run(*tools, "!pte").error);
  std::filesystem::remove(dump);
}

TEST_CASE("!lmi and !dh show a loaded image's headers as llvm-readobj reads the file", "[windows]") {
  const w::windows_system sys;
  const std::string dump = sys.write_dump("images.dmp");
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  for (const auto& m : sys.modules) {
    const auto h = w::file_headers(m.file);
    const auto cv = w::codeview(m.file);
    const std::string stem = m.base_name.substr(0, m.base_name.find('.'));
    const std::string name = stem == "ntoskrnl" ? "nt" : stem;
    auto lmi = w::run(*tools, "!lmi " + name, "json");
    REQUIRE_FALSE(lmi.error);
    CHECK(lmi.text.find(absl::StrFormat("     Time Stamp: %x\n", h.timestamp)) != std::string::npos);
    CHECK(lmi.text.find(absl::StrFormat("           Size: %x\n", h.size_of_image)) != std::string::npos);
    CHECK(lmi.text.find(absl::StrFormat("   Base Address: %016x", m.base)) != std::string::npos);
    auto j = lmi.json();
    // The PDB identity as llvm-pdbutil reads the PDB the image names.
    const auto pdb = w::summary(w::fixture(cv.pdb_path.substr(cv.pdb_path.find_last_of("\\/") + 1)));
    CHECK(std::string(j["result"]["guid"].GetString()) == pdb.guid);
    CHECK(j["result"]["age"].GetUint() == pdb.age);
    // By an address inside it, too.
    CHECK(w::run(*tools, absl::StrFormat("!lmi %x", m.base + 0x1000)).text.find("Module: " + name) !=
          std::string::npos);
    auto dh = w::run(*tools, "!dh " + name, "json");
    REQUIRE_FALSE(dh.error);
    CHECK(dh.text.find(absl::StrFormat("%8X machine (X64)", h.machine)) != std::string::npos);
    CHECK(dh.text.find(absl::StrFormat("%8X address of entry point", h.entry)) != std::string::npos);
    CHECK(dh.text.find(absl::StrFormat("%8X size of image", h.size_of_image)) != std::string::npos);
    CHECK(dh.text.find(absl::StrFormat("%8X number of sections", h.section_count)) != std::string::npos);
    const auto sections = w::sections(m.file);
    REQUIRE(dh.json()["result"]["sections"].Size() == sections.size());
    for (size_t i = 0; i < sections.size(); ++i) {
      CHECK(dh.text.find(absl::StrFormat("%8s name\n%8X virtual size\n%8X virtual address\n", sections[i].name,
                                         sections[i].virtual_size, sections[i].virtual_address)) != std::string::npos);
    }
    auto only_sections = w::run(*tools, "!dh -s " + name);
    CHECK(only_sections.text.find("FILE HEADER VALUES") == std::string::npos);
    CHECK(only_sections.text.find("SECTION HEADER #1") != std::string::npos);
  }
  CHECK(w::run(*tools, "!lmi nosuchmodule").error);
  std::filesystem::remove(dump);
}
