// toolhost::analysis against independent oracles on binaries nobody wrote for these tests:
// readelf for symbols, sections and FDEs, objdump -d for direct calls and PLT names, strings
// for text in the data sections. Nothing expected is written down here; every value comes
// from the oracle at run time.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <toolhost/analysis/eh_frame.hpp>
#include <toolhost/analysis/function_body.hpp>
#include <toolhost/analysis/names.hpp>
#include <toolhost/analysis/program_analysis.hpp>
#include <toolhost/elf/elf_file.hpp>
#include <toolhost/pe/image.hpp>

namespace an = toolhost::analysis;

namespace {

const std::string kFixtures = ANALYSIS_FIXTURE_DIR;
const std::string kWindowsFixtures = WINDOWS_FIXTURE_DIR;

std::string run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>/dev/null").c_str(), "r"), pclose);
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 65536> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

uint64_t hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

struct readelf_section {
  std::string name, type, flags;
  uint64_t address = 0, offset = 0, size = 0;
};

bool is_pe(const std::string& path) { return slurp(path).substr(0, 2) == "MZ"; }

// The section table: readelf -SW for ELF; objdump -h for PE, its flags turned into readelf's
// letters (A allocated, X code) and its types (NOBITS without contents).
std::vector<readelf_section> sections_of(const std::string& path) {
  std::vector<readelf_section> out;
  if (is_pe(path)) {
    static const std::regex row(
        R"(^\s*\d+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\S+\s+(.*)$)");
    for (const std::string& l : lines(run("objdump -h -w " + path))) {
      std::smatch m;
      if (!std::regex_match(l, m, row)) continue;
      const std::string flags = m[5];
      std::string letters = flags.find("ALLOC") != std::string::npos ? "A" : "";
      if (flags.find("CODE") != std::string::npos) letters += "X";
      const std::string type = flags.find("CONTENTS") != std::string::npos ? "PROGBITS" : "NOBITS";
      out.push_back({m[1], type, letters, hex(m[3]), hex(m[4]), hex(m[2])});
    }
    return out;
  }
  static const std::regex row(
      R"(^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([A-Za-z]*)\s+\d+\s+\d+\s+\d+\s*$)");
  for (const std::string& l : lines(run("readelf -SW " + path))) {
    std::smatch m;
    if (std::regex_match(l, m, row)) out.push_back({m[1], m[2], m[6], hex(m[3]), hex(m[4]), hex(m[5])});
  }
  return out;
}

// A PE image's functions as its PDB's procedure records place them (llvm-pdbutil), and its
// exports (llvm-readobj): section:offset turned into an address through the section table.
std::set<uint64_t> pe_function_starts(const std::string& image, const std::string& pdb) {
  const auto sections = sections_of(image);
  std::set<uint64_t> out;
  static const std::regex proc(R"(^\s*parent = \d+, end = \d+, addr = ([0-9a-f]{4}):(\d+), code size = \d+$)");
  for (const std::string& l : lines(run("llvm-pdbutil-14 dump --symbols " + pdb))) {
    std::smatch m;
    if (!std::regex_match(l, m, proc)) continue;
    const size_t index = std::stoul(m[1].str(), nullptr, 16);
    if (index >= 1 && index <= sections.size()) out.insert(sections[index - 1].address + std::stoull(m[2]));
  }
  uint64_t base = 0;
  static const std::regex base_row(R"(^\s*ImageBase: 0x([0-9A-Fa-f]+)$)");
  static const std::regex export_row(R"(^\s*RVA: 0x([0-9A-Fa-f]+)$)");
  for (const std::string& l : lines(run("llvm-readobj-14 --file-headers --coff-exports " + image))) {
    std::smatch m;
    if (std::regex_match(l, m, base_row)) base = hex(m[1]);
    if (!std::regex_match(l, m, export_row) || hex(m[1]) == 0) continue;
    // Exported code only: data and forwarders are exports too.
    const uint64_t address = base + hex(m[1]);
    for (const auto& sec : sections) {
      if (sec.flags.find('X') != std::string::npos && address >= sec.address && address < sec.address + sec.size) {
        out.insert(address);
      }
    }
  }
  return out;
}

// Defined FUNC and IFUNC symbols in executable sections, from readelf -sW (.symtab and .dynsym);
// for a PE image, what its PDB and export table name.
std::set<uint64_t> function_symbols(const std::string& path) {
  if (is_pe(path)) return pe_function_starts(path, path.substr(0, path.rfind('.')) + ".pdb");
  const auto sections = sections_of(path);
  static const std::regex row(R"(^\s*\d+:\s+([0-9a-f]+)\s+\S+\s+(FUNC|IFUNC)\s+\S+\s+\S+\s+(\d+)\s+.*$)");
  std::set<uint64_t> out;
  for (const std::string& l : lines(run("readelf -sW " + path))) {
    std::smatch m;
    if (!std::regex_match(l, m, row)) continue;
    const uint64_t address = hex(m[1]);
    for (const auto& s : sections) {
      if (s.flags.find('X') != std::string::npos && address >= s.address && address < s.address + s.size) {
        out.insert(address);
      }
    }
  }
  return out;
}

// Direct calls as objdump -d prints them: (call site, target).
std::set<std::pair<uint64_t, uint64_t>> objdump_calls(const std::string& path) {
  // ELF disassembly writes targets as "4090 <abort@plt>", PE disassembly as "0x14000103d".
  static const std::regex row(R"(^\s*([0-9a-f]+):\s+(?:[a-z0-9.]+\s+)*?call[lqw]?\s+(?:0x)?([0-9a-f]+)(\s.*)?$)");
  std::set<std::pair<uint64_t, uint64_t>> out;
  for (const std::string& l : lines(run("objdump -d --no-show-raw-insn -w " + path))) {
    std::smatch m;
    if (std::regex_match(l, m, row)) out.insert({hex(m[1]), hex(m[2])});
  }
  return out;
}

// <name@plt> labels objdump synthesises for PLT entries.
std::map<std::string, uint64_t> objdump_plt(const std::string& path) {
  static const std::regex row(R"(^([0-9a-f]+) <([^@>]+)@plt>:$)");
  std::map<std::string, uint64_t> out;
  for (const std::string& l : lines(run("objdump -d -w " + path))) {
    std::smatch m;
    if (std::regex_match(l, m, row)) out[m[2]] = hex(m[1]);
  }
  return out;
}

// strings -t x: (file offset, text) of every run of at least 6 printable characters.
std::vector<std::pair<uint64_t, std::string>> strings_of(const std::string& path, const std::string& encoding) {
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const std::string& l : lines(run("strings -a -n 6 -t x -e " + encoding + " " + path))) {
    size_t i = l.find_first_not_of(' ');
    const size_t space = l.find(' ', i);
    if (i == std::string::npos || space == std::string::npos) continue;
    out.push_back({hex(l.substr(i, space - i)), l.substr(space + 1)});
  }
  return out;
}

std::shared_ptr<const an::program_analysis> analyse(const std::string& path) {
  std::optional<an::image> img;
  if (is_pe(path)) {
    auto pe = toolhost::pe::image::open_file(path);
    REQUIRE(pe.ok());
    img = an::image_from_pe(std::make_shared<const toolhost::pe::image>(std::move(*pe)));
  } else {
    auto elf = toolhost::elf::elf_file::open(path);
    REQUIRE(elf.ok());
    img = an::image_from_elf(std::make_shared<const toolhost::elf::elf_file>(std::move(*elf)));
  }
  auto done = an::program_analysis::run(std::move(*img));
  REQUIRE(done.ok());
  return *done;
}

std::string describe(const std::set<std::pair<uint64_t, uint64_t>>& s) {
  std::string out;
  size_t n = 0;
  for (const auto& [a, b] : s) {
    if (n++ == 8) return out + " ...";
    out += " " + an::hex_address(a) + "->" + an::hex_address(b);
  }
  return out;
}

// The binaries: some of /usr/bin (stripped by Debian: only .dynsym names functions), and zlib's
// examples built here. A stripped build is checked against its unstripped twin's symbols.
struct subject {
  std::string path;
  std::string symbols_from;  // the file whose symbol table names the functions
};

std::vector<subject> subjects() {
  return {
      {"/usr/bin/ls", "/usr/bin/ls"},
      {"/usr/bin/gdb", "/usr/bin/gdb"},
      {"/usr/bin/ninja", "/usr/bin/ninja"},
      {kFixtures + "/enough", kFixtures + "/enough"},
      {kFixtures + "/enough-stripped", kFixtures + "/enough"},
      {kFixtures + "/enough-pie-stripped", kFixtures + "/enough-pie"},
      {kFixtures + "/gun-stripped", kFixtures + "/gun"},
      {kFixtures + "/i386.so", kFixtures + "/i386.so"},
      {kFixtures + "/pe_sample.exe", kFixtures + "/pe_sample.exe"},
      {kWindowsFixtures + "/wsfix.sys", kWindowsFixtures + "/wsfix.sys"},
      {kWindowsFixtures + "/wsdrv32.dll", kWindowsFixtures + "/wsdrv32.dll"},
  };
}

bool is_elf(const subject& s) { return !is_pe(s.path); }

}  // namespace

TEST_CASE("every function start the symbol table names is found", "[analysis][functions]") {
  for (const subject& s : subjects()) {
    INFO(s.path);
    const auto a = analyse(s.path);
    const auto expected = function_symbols(s.symbols_from);
    REQUIRE(!expected.empty());
    std::vector<uint64_t> missing;
    for (uint64_t address : expected) {
      if (a->functions().starting(address) == nullptr) missing.push_back(address);
    }
    INFO(missing.size() << " of " << expected.size() << " missing, first "
                        << (missing.empty() ? "" : an::hex_address(missing[0])));
    CHECK(missing.empty());
  }
}

TEST_CASE("call edges equal the direct calls objdump -d shows", "[analysis][xrefs]") {
  size_t calls = 0;  // a small DLL may call nothing directly; all of them together do
  for (const subject& s : subjects()) {
    INFO(s.path);
    const auto a = analyse(s.path);
    std::set<std::pair<uint64_t, uint64_t>> ours;
    for (const auto& r : a->references().all()) {
      if (r.kind == toolhost::disasm::reference_kind::call) ours.insert({r.from, r.to});
    }
    const auto theirs = objdump_calls(s.path);
    calls += theirs.size();
    std::set<std::pair<uint64_t, uint64_t>> only_ours, only_theirs;
    std::set_difference(ours.begin(), ours.end(), theirs.begin(), theirs.end(),
                        std::inserter(only_ours, only_ours.end()));
    std::set_difference(theirs.begin(), theirs.end(), ours.begin(), ours.end(),
                        std::inserter(only_theirs, only_theirs.end()));
    INFO("ours " << ours.size() << ", objdump " << theirs.size() << "; only ours:" << describe(only_ours)
                 << "; only objdump:" << describe(only_theirs));
    CHECK(only_ours.empty());
    CHECK(only_theirs.empty());
  }
  CHECK(calls > 1000);
}

TEST_CASE("every string strings -n 6 finds in the data sections is listed", "[analysis][strings]") {
  for (const subject& s : subjects()) {
    INFO(s.path);
    const auto a = analyse(s.path);
    std::vector<an::string_entry> narrow, wide;
    for (const auto& e : a->strings()) (e.encoding == an::string_encoding::utf16le ? wide : narrow).push_back(e);
    std::vector<readelf_section> data;
    for (const auto& sec : sections_of(s.path)) {
      if (sec.flags.find('A') != std::string::npos && sec.flags.find('X') == std::string::npos &&
          sec.type != "NOBITS") {
        data.push_back(sec);
      }
    }
    const auto covered = [](const std::vector<an::string_entry>& list, uint64_t address, uint64_t bytes) {
      auto it = std::upper_bound(list.begin(), list.end(), address,
                                 [](uint64_t a, const an::string_entry& e) { return a < e.address; });
      if (it == list.begin()) return false;
      --it;
      return it->address <= address && it->address + it->byte_length >= address + bytes;
    };
    size_t checked = 0;
    for (const auto& [encoding, list, unit] :
         {std::tuple{std::string("s"), &narrow, 1}, std::tuple{std::string("l"), &wide, 2}}) {
      for (const auto& [offset, text] : strings_of(s.path, encoding)) {
        const uint64_t bytes = text.size() * static_cast<uint64_t>(unit);
        for (const auto& sec : data) {
          if (offset < sec.offset || offset + bytes > sec.offset + sec.size) continue;
          const uint64_t address = sec.address + (offset - sec.offset);
          INFO(sec.name << " " << an::hex_address(address) << " \"" << text << "\"");
          CHECK(covered(*list, address, bytes));
          ++checked;
        }
      }
    }
    CHECK(checked > 0);
  }
}

TEST_CASE("bytes read by address are the file's bytes at the section table's offset", "[analysis][bytes]") {
  for (const subject& s : subjects()) {
    INFO(s.path);
    const auto a = analyse(s.path);
    const std::string file = slurp(s.path);
    size_t checked = 0;
    for (const auto& sec : sections_of(s.path)) {
      if (sec.flags.find('A') == std::string::npos || sec.type == "NOBITS" || sec.size == 0) continue;
      for (uint64_t delta : {uint64_t{0}, sec.size / 2, sec.size - 1}) {
        const uint64_t address = sec.address + delta;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(64, sec.size - delta));
        INFO(sec.name << " " << an::hex_address(address));
        CHECK(a->img().file_offset(address) == sec.offset + delta);
        auto bytes = a->img().read(address, n);
        REQUIRE(bytes.ok());
        CHECK(*bytes == file.substr(sec.offset + delta, n));
        ++checked;
      }
    }
    CHECK(checked > 0);
    uint64_t top = 0;
    for (const auto& seg : a->img().segments()) top = std::max(top, seg.end());
    CHECK_FALSE(a->img().read(top + 0x10000, 16).ok());
  }
}

TEST_CASE("the FDEs of .eh_frame are the ones readelf lists", "[analysis][eh_frame]") {
  for (const subject& s : subjects()) {
    if (!is_elf(s)) continue;
    INFO(s.path);
    std::set<std::pair<uint64_t, uint64_t>> theirs;
    static const std::regex row(R"(.* FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)$)");
    for (const std::string& l : lines(run("readelf -wf " + s.path))) {
      std::smatch m;
      if (std::regex_match(l, m, row) && hex(m[2]) > hex(m[1])) theirs.insert({hex(m[1]), hex(m[2])});
    }
    const auto a = analyse(s.path);
    std::set<std::pair<uint64_t, uint64_t>> ours;
    for (const auto& e : a->img().unwind_extents()) ours.insert({e.start, e.end});
    CHECK(ours == theirs);
  }
}

TEST_CASE("PLT entries carry their import's name where objdump shows name@plt", "[analysis][functions]") {
  for (const std::string path : {kFixtures + "/gun-stripped", kFixtures + "/i386.so", std::string("/usr/bin/ls")}) {
    INFO(path);
    const auto a = analyse(path);
    const auto plt = objdump_plt(path);
    REQUIRE(!plt.empty());
    for (const auto& [name, address] : plt) {
      INFO(name);
      const an::function* f = a->functions().starting(address);
      REQUIRE(f != nullptr);
      CHECK(f->name == name);
      CHECK(f->is_thunk());
    }
  }
}

TEST_CASE("PE import thunks carry their import's name, at the slots llvm-readobj lists", "[analysis][functions]") {
  const std::string path = kFixtures + "/pe_sample.exe";
  const auto a = analyse(path);
  // llvm-readobj --coff-imports: each DLL's IAT RVA, then its symbols in slot order.
  std::map<uint64_t, std::string> slots;
  uint64_t base = 0, iat = 0;
  static const std::regex base_row(R"(^\s*ImageBase: 0x([0-9A-Fa-f]+)$)");
  static const std::regex iat_row(R"(^\s*ImportAddressTableRVA: 0x([0-9A-Fa-f]+)$)");
  static const std::regex symbol_row(R"(^\s*Symbol: (\S+) \(\d+\)$)");
  for (const std::string& l : lines(run("llvm-readobj-14 --file-headers --coff-imports " + path))) {
    std::smatch m;
    if (std::regex_match(l, m, base_row)) base = hex(m[1]);
    if (std::regex_match(l, m, iat_row)) iat = base + hex(m[1]);
    if (std::regex_match(l, m, symbol_row)) {
      slots[iat] = m[1];
      iat += 8;
    }
  }
  REQUIRE(slots.size() == 4);
  // objdump -d: every "jmp *...(%rip)  # SLOT" that starts a function the analysis found.
  static const std::regex thunk(
      R"(^\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*jmp\s+\*0x[0-9a-f]+\(%rip\)\s+# 0x([0-9a-f]+)$)");
  size_t named = 0;
  for (const std::string& l : lines(run("objdump -d -w " + path))) {
    std::smatch m;
    if (!std::regex_match(l, m, thunk) || slots.count(hex(m[2])) == 0) continue;
    const an::function* f = a->functions().starting(hex(m[1]));
    REQUIRE(f != nullptr);
    CHECK(f->name == slots[hex(m[2])]);
    CHECK(f->is_thunk());
    ++named;
  }
  CHECK(named == slots.size());
  for (const auto& [slot, name] : slots) {
    INFO(name);
    const an::name_entry* n = a->name_at(slot);
    REQUIRE(n != nullptr);
    CHECK(n->text.find(name) != std::string::npos);
  }
}

TEST_CASE("a stripped build's functions have Ghidra's FUN_ names and the unstripped sizes", "[analysis][functions]") {
  const auto stripped = analyse(kFixtures + "/enough-stripped");
  const auto full = analyse(kFixtures + "/enough");
  size_t sized = 0;
  for (const an::function& f : full->functions().all()) {
    if (!f.named_by_symbol || !f.end_known) continue;
    const an::function* g = stripped->functions().starting(f.address);
    INFO(f.name);
    REQUIRE(g != nullptr);
    CHECK((g->name == an::default_function_name(f.address) || g->from(an::from_entry)));
    // The FDE covers what the symbol's size does.
    if (g->end_known) CHECK(g->end == f.end);
    ++sized;
  }
  CHECK(sized > 5);
}

TEST_CASE("the i386 PIC sample: no function where call/pop reads the program counter", "[analysis][functions]") {
  const auto a = analyse(kFixtures + "/i386.so");
  const auto symbols = function_symbols(kFixtures + "/i386.so");
  for (const an::function& f : a->functions().all()) {
    if (f.is_thunk() || f.from(an::from_entry) || symbols.count(f.address) != 0) continue;
    FAIL_CHECK("unexpected function " << f.name);
  }
  const an::function* shout = a->functions().named("shout");
  REQUIRE(shout != nullptr);
  const auto body = an::decode_function(a->img(), *shout, 1000);
  REQUIRE(!body.instructions.empty());
  CHECK(body.instructions.back().is_ret());
  CHECK(body.blocks.size() >= 1);
}

TEST_CASE("basic blocks cover the function, split at branches and their targets", "[analysis][blocks]") {
  const auto a = analyse(kFixtures + "/enough");
  size_t with_branches = 0;
  for (const an::function& f : a->functions().all()) {
    if (!f.named_by_symbol) continue;
    const auto body = an::decode_function(a->img(), f, 100000);
    if (body.instructions.empty()) continue;
    // Blocks tile the decoded instructions in order, without gaps.
    uint64_t at = f.address;
    for (const auto& b : body.blocks) {
      CHECK(b.start == at);
      CHECK(b.end > b.start);
      at = b.end;
    }
    CHECK(at == body.instructions.back().address + body.instructions.back().length);
    // Every jump inside the function lands on a block start.
    std::set<uint64_t> starts;
    for (const auto& b : body.blocks) starts.insert(b.start);
    for (const auto& insn : body.instructions) {
      if (!insn.is_jump() || !insn.target || *insn.target < f.address || *insn.target >= at) continue;
      ++with_branches;
      CHECK(starts.count(*insn.target) == 1);
    }
  }
  CHECK(with_branches > 10);
}

TEST_CASE("the .eh_frame parser survives a damaged section", "[analysis][eh_frame]") {
  auto elf = toolhost::elf::elf_file::open(kFixtures + "/enough");
  REQUIRE(elf.ok());
  const auto* eh = elf->find_section(".eh_frame");
  REQUIRE(eh != nullptr);
  std::string bytes(elf->bytes().substr(eh->offset, eh->size));
  const auto whole = an::parse_eh_frame({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, eh->address, 8);
  REQUIRE(whole.size() > 5);
  // Cut short in the middle, every prefix parses to a prefix of the whole.
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    const auto part = an::parse_eh_frame({reinterpret_cast<const uint8_t*>(bytes.data()), cut}, eh->address, 8);
    REQUIRE(part.size() <= whole.size());
    for (size_t i = 0; i < part.size(); ++i) CHECK(part[i].start == whole[i].start);
  }
  // A length that claims the whole address space ends the walk, not the process.
  bytes[0] = bytes[1] = bytes[2] = bytes[3] = '\xff';
  CHECK(an::parse_eh_frame({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, eh->address, 8).empty());
}
