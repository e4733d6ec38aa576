// toolhost::pdb against llvm-pdbutil-14 on the PDBs lld-link-14 wrote for the fixtures.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <toolhost/pdb/pdb_file.hpp>
#include <toolhost/pe/image.hpp>
#include <toolhost/types/dt.hpp>

#include "oracle.hpp"
#include "type_oracle.hpp"

namespace w = toolhost::test::windows;
using toolhost::pdb::pdb_file;

namespace {

const char* const kPdbs[] = {"wsfix.pdb", "wsdrv.pdb", "wsdrv32.pdb"};

std::unique_ptr<pdb_file> open(const std::string& file) {
  auto pdb = pdb_file::open(w::fixture(file));
  INFO((pdb.ok() ? "" : std::string(pdb.status().message())));
  REQUIRE(pdb.ok());
  return std::move(*pdb);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("identity: the GUID and age llvm-pdbutil reads, checked against the image", "[pdb]") {
  for (const char* file : kPdbs) {
    INFO(file);
    auto pdb = open(file);
    const auto want = w::summary(w::fixture(file));
    CHECK(pdb->id().guid_text() == want.guid);
    CHECK(pdb->id().age == want.age);
    const std::string image = std::string(file) == "wsdrv32.pdb"
                                  ? "wsdrv32.dll"
                                  : std::string(file).replace(std::string(file).size() - 3, 3, "sys");
    auto pe = toolhost::pe::image::open_file(w::fixture(image));
    REQUIRE(pe.ok());
    auto cv = pe->codeview();
    REQUIRE(cv.ok());
    REQUIRE(cv->has_value());
    CHECK(pdb->check_identity((*cv)->guid, (*cv)->age).ok());
    // Another image's identity is refused, and the message names both.
    auto wrong = pdb->check_identity((*cv)->guid, (*cv)->age + 1);
    REQUIRE(!wrong.ok());
    CHECK(std::string(wrong.message()).find(want.guid) != std::string::npos);
    CHECK(std::string(wrong.message()).find("age " + std::to_string(want.age + 1)) != std::string::npos);
  }
  CHECK(open("wsfix.pdb")->has_private_symbols());
}

TEST_CASE("publics, globals and procedures at the RVAs llvm-pdbutil gives", "[pdb]") {
  for (const char* file : kPdbs) {
    INFO(file);
    auto pdb = open(file);
    auto index = pdb->symbols();
    REQUIRE(index.ok());
    const auto sections = w::section_addresses(w::fixture(file));
    auto rva = [&](const w::pdb_symbol& s) { return static_cast<uint32_t>(sections.at(s.segment - 1) + s.offset); };
    const bool x86 = std::string(file) == "wsdrv32.pdb";
    size_t checked = 0;
    for (const auto& p : w::pdb_symbols(w::fixture(file), "-publics")) {
      if (p.kind != "S_PUB32") continue;
      std::string name = p.name;
      if (x86 && !name.empty() && name[0] == '_') name.erase(0, 1);  // C decoration, as WinDbg shows it
      if (x86 && name.find('@') != std::string::npos) name.resize(name.find('@'));
      const auto* s = (*index)->find(name);
      REQUIRE(s != nullptr);
      CHECK(s->rva == rva(p));
      CHECK((s->k == toolhost::pdb::symbol::kind::function) == p.function);
      ++checked;
    }
    for (const auto& g : w::pdb_symbols(w::fixture(file), "-globals")) {
      if (g.kind != "S_GDATA32") continue;
      const auto* s = (*index)->find(g.name);
      REQUIRE(s != nullptr);
      CHECK(s->rva == rva(g));
      ++checked;
    }
    for (const auto& f : w::pdb_symbols(w::fixture(file), "-symbols")) {
      if (f.kind != "S_GPROC32" && f.kind != "S_LPROC32") continue;
      const auto* s = (*index)->find(f.name);
      REQUIRE(s != nullptr);
      CHECK(s->rva == rva(f));
      CHECK(s->size == f.code_size);
      // Every byte of the procedure names it; the byte after it does not (as a function).
      CHECK((*index)->function_at(s->rva + f.code_size - 1) == s);
      CHECK((*index)->nearest(s->rva + f.code_size / 2)->name == f.name);
      ++checked;
    }
    CHECK(checked >= 3);
  }
  // A private function only the module stream knows (no public), and wildcards.
  auto pdb = open("wsfix.pdb");
  const auto* index = *pdb->symbols();
  CHECK(index->find("WsTouch") != nullptr);
  CHECK(index->find("wstouch") == index->find("WsTouch"));
  std::set<std::string> nt;
  index->match("Nt*", [&](const toolhost::pdb::symbol& s) {
    nt.insert(std::string(s.name));
    return true;
  });
  CHECK(nt == std::set<std::string>{"NtCloseThing", "NtCreateThing", "NtQueryThing"});
}

TEST_CASE("dt of every fixture struct matches llvm-pdbutil dump -types member for member", "[pdb]") {
  for (const char* file : kPdbs) {
    INFO(file);
    auto pdb = open(file);
    const w::type_oracle oracle(w::fixture(file));
    const auto& table = pdb->types();
    size_t structs = 0;
    for (const auto& [ti, name] : oracle.structures()) {
      INFO(name);
      auto id = table.find(name);
      REQUIRE(id.has_value());
      CHECK(table.get(*id).size == oracle.size_of(absl::StrFormat("0x%x", ti)));
      toolhost::types::dt_request r{table, *id, "m!" + name};
      auto out = toolhost::types::render_dt(r);
      REQUIRE(out.ok());
      std::vector<std::string> want;
      for (const auto& m : oracle.members(ti)) want.push_back(w::dt_line(m));
      CHECK(lines(out->text) == want);
      ++structs;
    }
    CHECK(structs >= (std::string(file) == "wsfix.pdb" ? 8u : 1u));
    for (const auto& [ti, name] : oracle.enumerations()) {
      auto id = table.find(name);
      REQUIRE(id.has_value());
      toolhost::types::dt_request r{table, *id, "m!" + name};
      auto out = toolhost::types::render_dt(r);
      REQUIRE(out.ok());
      std::vector<std::string> want;
      for (const auto& [e, v] : oracle.enumerators(ti)) want.push_back("   " + e + " = 0n" + std::to_string(v));
      CHECK(lines(out->text) == want);
    }
  }
  // Case-insensitive names, typedefs (S_UDT) and listing by prefix.
  auto pdb = open("wsfix.pdb");
  const auto& table = pdb->types();
  CHECK(table.find("_ws_object") == table.find("_WS_OBJECT"));
  auto alias = table.find("WS_OBJECT");
  REQUIRE(alias.has_value());
  CHECK(toolhost::types::strip_aliases(table, *alias) == *table.find("_WS_OBJECT"));
  const auto names = toolhost::types::matching_type_names(table, "_WS_*");
  CHECK(std::find(names.begin(), names.end(), "_WS_OBJECT") != names.end());
  CHECK(std::find(names.begin(), names.end(), "_WS_HEADER") != names.end());
  CHECK(std::none_of(names.begin(), names.end(),
                     [](const std::string& n) { return n.find("unnamed") != std::string::npos; }));
  CHECK(!table.find("_WS_NOT_THERE").has_value());
  // A declared-only type is incomplete, not an error.
  auto opaque = table.find("_WS_OPAQUE");
  CHECK((!opaque.has_value() || table.get(*opaque).incomplete));
}

TEST_CASE("not a PDB, truncated and bit-flipped PDBs give errors naming the file", "[pdb]") {
  CHECK(pdb_file::open(w::fixture("wsfix.sys")).status().message().find("is not a PDB") != std::string::npos);
  CHECK(pdb_file::open(w::fixture("missing.pdb")).status().code() == absl::StatusCode::kNotFound);
  const std::string bytes = slurp(w::fixture("wsfix.pdb"));
  const std::string path =
      (std::filesystem::temp_directory_path() / ("toolhost-pdb-" + std::to_string(getpid()) + ".pdb")).string();
  auto exercise = [&](const std::string& content) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(content.data(), static_cast<std::streamsize>(content.size()));
    }
    auto pdb = pdb_file::open(path);
    if (!pdb.ok()) {
      CHECK(std::string(pdb.status().message()).find(path) != std::string::npos);
      return;
    }
    if (auto index = (*pdb)->symbols(); index.ok()) (void)(*index)->find("NtCreateThing");
    const auto& t = (*pdb)->types();
    if (auto id = t.find("_WS_OBJECT")) {
      toolhost::types::dt_request r{t, *id, "m!_WS_OBJECT"};
      r.options.depth = 3;
      (void)toolhost::types::render_dt(r);
    }
  };
  for (size_t cut = 0; cut < bytes.size(); cut += bytes.size() / 97 + 1) exercise(bytes.substr(0, cut));
  std::mt19937 rng(18);
  for (int round = 0; round < 300; ++round) {
    std::string mutated = bytes;
    for (int flips = 0; flips < 8; ++flips) {
      const size_t at = rng() % mutated.size();
      mutated[at] = static_cast<char>(mutated[at] ^ (1u << (rng() % 8)));
    }
    exercise(mutated);
  }
  std::filesystem::remove(path);
}
