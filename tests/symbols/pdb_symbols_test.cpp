// The fixture kernel's modules with their PDBs: lm, x, ln, u, uf, dqs and dt through the
// debugger, every expected value read from llvm-pdbutil-14 / llvm-objdump-14.
#include <map>
#include <regex>

#include <absl/strings/str_format.h>

#include "debugger_session.hpp"
#include "kernel_dump.hpp"
#include "oracle.hpp"
#include "type_oracle.hpp"

namespace w = toolhost::test::windows;
using w::kFixBase;

namespace {

std::string addr(uint64_t v) { return absl::StrFormat("%08x`%08x", v >> 32, v & 0xffffffff); }

// RVAs of wsfix.pdb's symbols by name, from llvm-pdbutil: publics, globals and procedures.
struct pdb_facts {
  std::map<std::string, uint32_t> rva;
  std::map<std::string, uint32_t> code_size;
  std::vector<std::string> publics;
  explicit pdb_facts(const std::string& pdb) {
    const auto sections = w::section_addresses(pdb);
    for (const char* option : {"-publics", "-globals", "-symbols"}) {
      for (const auto& s : w::pdb_symbols(pdb, option)) {
        if (s.segment == 0 || s.name.empty()) continue;
        rva[s.name] = static_cast<uint32_t>(sections.at(s.segment - 1) + s.offset);
        if (s.code_size != 0) code_size[s.name] = s.code_size;
        if (s.kind == "S_PUB32") publics.push_back(s.name);
      }
    }
  }
};

}  // namespace

TEST_CASE("a module's PDB from a folder on the symbol path: lm, x, ln, u, uf, dqs", "[symbols][pdb]") {
  const std::string dump = w::make_kernel_dump("pdb.dmp");
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  const pdb_facts pdb(w::fixture("wsfix.pdb"));

  CHECK(w::run(*tools, "lm m wsfix").text.find("wsfix      (deferred)") != std::string::npos);
  auto x = w::run(*tools, "x wsfix!Nt*", "json");
  REQUIRE_FALSE(x.error);
  size_t nt = 0;
  for (const auto& name : pdb.publics) {
    if (name.rfind("Nt", 0) != 0) continue;
    ++nt;
    CHECK(x.text.find(addr(kFixBase + pdb.rva.at(name)) + " wsfix!" + name) != std::string::npos);
  }
  CHECK(x.json()["result"]["symbols"].Size() == nt);
  auto lm = w::run(*tools, "lm m wsfix", "json");
  CHECK(std::regex_search(lm.text, std::regex(R"(wsfix      \(pdb symbols\)\s+\S*wsfix\.pdb)")));
  CHECK(std::string(lm.json()["result"]["modules"][0]["symbols"].GetString()) == "pdb symbols");
  CHECK(std::string(lm.json()["result"]["modules"][0]["file"].GetString()) == w::fixture("wsfix.pdb"));

  // A function only the PDB names (static, no export, no public): x, ln inside it.
  REQUIRE(pdb.rva.count("WsTouch") == 1);
  const uint64_t touch = kFixBase + pdb.rva.at("WsTouch");
  CHECK(w::run(*tools, "x wsfix!WsTouch").text.find(addr(touch) + " wsfix!WsTouch") != std::string::npos);
  const uint32_t half = pdb.code_size.at("WsTouch") / 2;
  auto ln = w::run(*tools, absl::StrFormat("ln %x", touch + half), "json");
  CHECK(ln.text.find(absl::StrFormat("(%s)   wsfix!WsTouch+0x%x", addr(touch), half)) != std::string::npos);
  CHECK(std::string(ln.json()["result"]["symbol"].GetString()) == absl::StrFormat("wsfix!WsTouch+0x%x", half));

  // u starts at the symbol; uf covers exactly the procedure's code size from the PDB, the
  // instructions llvm-objdump finds between the same addresses.
  auto u = w::run(*tools, "u wsfix!NtCreateThing");
  CHECK(w::lines_of(u.text).front() == "wsfix!NtCreateThing:");
  CHECK(u.text.find(addr(kFixBase + pdb.rva.at("NtCreateThing")) + " ") != std::string::npos);
  const uint32_t inner = pdb.rva.at("WsCreateInner"), inner_size = pdb.code_size.at("WsCreateInner");
  const uint64_t image_base = w::file_headers(w::fixture("wsfix.sys")).image_base;
  const std::string objdump = w::run(
      absl::StrFormat("%s -d --no-show-raw-insn --start-address=0x%x --stop-address=0x%x %s", TOOLHOST_LLVM_OBJDUMP,
                      image_base + inner, image_base + inner + inner_size, w::fixture("wsfix.sys")));
  std::vector<uint64_t> want;
  static const std::regex insn(R"(^\s*([0-9a-f]+):\s)");
  for (const auto& l : w::lines_of(objdump)) {
    std::smatch m;
    if (std::regex_search(l, m, insn)) want.push_back(std::stoull(m[1], nullptr, 16) - image_base + kFixBase);
  }
  REQUIRE(!want.empty());
  auto uf = w::run(*tools, "uf wsfix!WsCreateInner");
  std::vector<uint64_t> got;
  static const std::regex line(R"(^([0-9a-f]{8})`([0-9a-f]{8}) )");
  for (const auto& l : w::lines_of(uf.text)) {
    std::smatch m;
    if (std::regex_search(l, m, line))
      got.push_back((std::stoull(m[1], nullptr, 16) << 32) | std::stoull(m[2], nullptr, 16));
  }
  CHECK(got == want);
  CHECK(w::lines_of(uf.text).front() == "wsfix!WsCreateInner:");
  // Calls inside name their targets.
  CHECK(uf.text.find("call wsfix!WsTouch (" + addr(touch) + ")") != std::string::npos);

  // dqs: the dispatch table's entries (relocated to the module base) name the functions.
  const uint64_t table = kFixBase + pdb.rva.at("WsDispatch");
  auto dqs = w::run(*tools, "dqs wsfix!WsDispatch L3");
  const auto rows = w::lines_of(dqs.text);
  REQUIRE(rows.size() >= 3);
  for (size_t i = 0; i < 3; ++i) {
    std::smatch m;
    static const std::regex row(R"(^([0-9a-f`]+)  ([0-9a-f`]+) wsfix!(\w+)$)");
    REQUIRE(std::regex_match(rows[i], m, row));
    CHECK(m[1] == addr(table + 8 * i));
    CHECK(m[2] == addr(kFixBase + pdb.rva.at(m[3])));
    CHECK(m[3].str().rfind("Nt", 0) == 0);
  }
  std::filesystem::remove(dump);
}

TEST_CASE("dt of every fixture struct through the debugger, and values at an address", "[symbols][pdb]") {
  const pdb_facts pdb(w::fixture("wsfix.pdb"));
  const w::type_oracle oracle(w::fixture("wsfix.pdb"));
  uint32_t object_ti = 0;
  for (const auto& [ti, name] : oracle.structures()) {
    if (name == "_WS_OBJECT") object_ti = ti;
  }
  REQUIRE(object_ti != 0);
  std::map<std::string, w::expected_member> fields;
  for (const auto& m : oracle.members(object_ti)) fields[m.name] = m;
  const uint64_t root = kFixBase + pdb.rva.at("WsRoot");
  // Values the test writes into WsRoot, at the offsets llvm-pdbutil gives.
  const std::string dump = w::make_kernel_dump("dt.dmp", [&](w::kernel_memory& k) {
    k.put<uint64_t>(root + fields.at("Id").offset, 0x1122334455667788);
    k.put<uint32_t>(root + fields.at("Flags").offset, 0xd);  // Active 1, Priority 6
    k.put<int32_t>(root + fields.at("State").offset, 5);
    k.write(root + fields.at("Name").offset, "written", 8);
    k.put<uint64_t>(root + fields.at("Parent").offset, 0);
    k.put<int16_t>(root + fields.at("Delta").offset, -3);
  });
  auto tools = w::make_tools({.symbol_path = TOOLHOST_WINDOWS_FIXTURES});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);

  for (const auto& [ti, name] : oracle.structures()) {
    auto dt = w::run(*tools, "dt wsfix!" + name);
    REQUIRE_FALSE(dt.error);
    std::vector<std::string> want;
    for (const auto& m : oracle.members(ti)) want.push_back(w::dt_line(m));
    auto got = w::lines_of(dt.text);
    got.pop_back();  // the trailer
    CHECK(got == want);
  }
  auto pad = [](const std::string& n) { return n.size() < 16 ? n + std::string(16 - n.size(), ' ') : n; };
  auto line = [&](const std::string& n, const std::string& value) {
    return absl::StrFormat("   +0x%03x ", fields.at(n).offset) + pad(n) + " : " + value;
  };
  auto dt = w::run(*tools, "dt wsfix!_WS_OBJECT wsfix!WsRoot", "json");
  REQUIRE_FALSE(dt.error);
  const std::string& t = dt.text;
  CHECK(w::lines_of(t).front() == "wsfix!_WS_OBJECT");
  CHECK(t.find(line("Id", "0x11223344`55667788")) != std::string::npos);
  CHECK(t.find(line("Flags", "0xd")) != std::string::npos);
  CHECK(t.find(line("Active", "0y1")) != std::string::npos);
  CHECK(t.find(line("Priority", "0y110")) != std::string::npos);
  CHECK(t.find(line("State", "0n5 ( WsWaiting )")) != std::string::npos);
  CHECK(t.find(line("Name", "[15]  \"written\"")) != std::string::npos);
  CHECK(t.find(line("Parent", "(null)")) != std::string::npos);
  CHECK(t.find(line("Delta", "0n-3")) != std::string::npos);
  auto doc = dt.json();
  CHECK(std::string(doc["result"]["type"].GetString()) == "wsfix!_WS_OBJECT");
  bool saw_name = false;
  for (const auto& f : doc["result"]["fields"].GetArray()) {
    if (std::string(f["name"].GetString()) == "Name") {
      saw_name = true;
      CHECK(std::string(f["string"].GetString()) == "written");
      CHECK(f["offset"].GetUint64() == fields.at("Name").offset);
    }
  }
  CHECK(saw_name);
  // Field filters and -r, a listing by prefix, an unknown type.
  auto filtered = w::run(*tools, "dt wsfix!_WS_OBJECT wsfix!WsRoot Name State");
  CHECK(w::lines_of(filtered.text).size() == 4);  // header, two fields, trailer
  auto nested = w::run(*tools, "dt -r1 wsfix!_WS_OBJECT Header");
  CHECK(nested.text.find("      +0x000 Type             : UChar") != std::string::npos);
  auto listing = w::run(*tools, "dt wsfix!_WS_*");
  CHECK(listing.text.find("          wsfix!_WS_OBJECT\n") != std::string::npos);
  auto missing = w::run(*tools, "dt wsfix!_NOT_A_TYPE");
  CHECK(missing.error);
  CHECK(missing.text.find("_NOT_A_TYPE") != std::string::npos);
  std::filesystem::remove(dump);
}
