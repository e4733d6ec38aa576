// A Windows kernel dump (written by the project's dump writer) with the fixture images at
// module bases: lm, lmv, x, ln and symbolized addresses from the images' exports, checked
// against llvm-objdump-14 and llvm-readobj-14.
#include <filesystem>
#include <regex>

#include <absl/strings/str_format.h>

#include "debugger_session.hpp"
#include "kernel_dump.hpp"
#include "oracle.hpp"

namespace w = toolhost::test::windows;

namespace {

using w::kDrvBase;
using w::kFixBase;

std::string make_dump(const std::string& name, bool export_page_missing = false) {
  return w::make_kernel_dump(name, [&](w::kernel_memory& k) {
    if (export_page_missing) k.unmap_page(kDrvBase + 0x2000);  // wsdrv's .rdata: exports and debug directory
  });
}

std::string addr(uint64_t v) { return absl::StrFormat("%08x`%08x", v >> 32, v & 0xffffffff); }

}  // namespace

TEST_CASE("a dump's PE modules: lm deferred, then export symbols named as llvm-objdump names them",
          "[symbols][exports]") {
  const std::string dump = make_dump("exports.dmp");
  auto tools = w::make_tools();
  auto opened = w::unpack(tools->open("dump", dump, ""));
  REQUIRE_FALSE(opened.error);

  const auto h = w::file_headers(w::fixture("wsfix.sys"));
  auto lm = w::run(*tools, "lm");
  REQUIRE_FALSE(lm.error);
  CHECK(lm.text.find(addr(kFixBase) + " " + addr(kFixBase + h.size_of_image) + "   wsfix      (deferred)") !=
        std::string::npos);
  CHECK(lm.text.find("   wsdrv      (deferred)") != std::string::npos);

  // x over the exports: every Nt* export at base + the RVA llvm-objdump gives.
  const auto exports = w::exports(w::fixture("wsfix.sys"));
  auto x = w::run(*tools, "x wsfix!Nt*", "json");
  REQUIRE_FALSE(x.error);
  auto xj = x.json();
  size_t expected = 0;
  for (const auto& e : exports) {
    if (e.name.rfind("Nt", 0) != 0) continue;
    ++expected;
    CHECK(x.text.find(addr(kFixBase + e.rva) + " wsfix!" + e.name) != std::string::npos);
  }
  REQUIRE(expected >= 3);
  CHECK(xj["result"]["symbols"].Size() == expected);

  // Now loaded: lm says where the symbols came from.
  lm = w::run(*tools, "lm m wsfix");
  CHECK(std::regex_search(lm.text, std::regex(R"(wsfix      \(export symbols\)\s+wsfix\.sys)")));

  // ln inside an exported function; the trailer-style name of an address.
  for (const auto& e : exports) {
    if (e.name != "NtQueryThing") continue;
    auto ln = w::run(*tools, "ln " + addr(kFixBase + e.rva + 3), "json");
    CHECK(ln.text.find("(" + addr(kFixBase + e.rva) + ")   wsfix!NtQueryThing+0x3") != std::string::npos);
    CHECK(std::string(ln.json()["result"]["symbol"].GetString()) == "wsfix!NtQueryThing+0x3");
    auto q = w::run(*tools, "? wsfix!NtQueryThing");
    CHECK(q.text.find(addr(kFixBase + e.rva)) != std::string::npos);
  }

  // lmv: the facts llvm-readobj reads from the file.
  auto lmv = w::run(*tools, "lmvm wsfix");
  CHECK(lmv.text.find(absl::StrFormat("    Timestamp:        %08X", h.timestamp)) != std::string::npos);
  CHECK(lmv.text.find(absl::StrFormat("    ImageSize:        %08X", h.size_of_image)) != std::string::npos);
  CHECK(lmv.text.find("    Image path: \\SystemRoot\\system32\\drivers\\wsfix.sys") != std::string::npos);
  CHECK(lmv.text.find("    PDB: wsfix.pdb") != std::string::npos);

  // .reload /f loads every module now; .reload alone defers them again.
  auto reload = w::run(*tools, ".reload /f");
  REQUIRE_FALSE(reload.error);
  CHECK(reload.text.find("wsdrv      (export symbols)") != std::string::npos);
  CHECK(w::run(*tools, ".reload").text.find("Reloaded 2 modules") != std::string::npos);
  CHECK(w::run(*tools, "lm").text.find("wsdrv      (deferred)") != std::string::npos);
  CHECK(w::run(*tools, "ld wsdrv").text.find("Symbols loaded for wsdrv (export symbols, wsdrv.sys)") !=
        std::string::npos);
  CHECK(w::run(*tools, "ld nothere").error);
  std::filesystem::remove(dump);
}

TEST_CASE("a module whose export page is paged out says why it has no symbols", "[symbols][exports]") {
  const std::string dump = make_dump("holes.dmp", true);
  auto tools = w::make_tools();
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  auto x = w::run(*tools, "x wsdrv!*");
  CHECK(x.text.find("No symbol matches") != std::string::npos);
  auto lmv = w::run(*tools, "lmvm wsdrv");
  CHECK(lmv.text.find("(no symbols)") != std::string::npos);
  CHECK(lmv.text.find("is not present") != std::string::npos);
  // The other module is unaffected.
  CHECK(w::run(*tools, "x wsfix!NtCreateThing").text.find("wsfix!NtCreateThing") != std::string::npos);
  std::filesystem::remove(dump);
}
