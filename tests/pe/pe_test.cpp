// toolhost::pe against llvm-readobj-14 and llvm-objdump-14 on images made by lld-link-14.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include <absl/strings/str_format.h>
#include <toolhost/pe/image.hpp>

#include "oracle.hpp"

namespace oracle = toolhost::test::windows;
using toolhost::pe::image;

namespace {

const char* const kImages[] = {"wsfix.sys", "wsdrv.sys", "wsdrv32.dll"};

image open(const std::string& file) {
  auto img = image::open_file(oracle::fixture(file));
  REQUIRE(img.ok());
  return *img;
}

// The image as the loader lays it out in memory (SizeOfImage bytes, sections at their RVAs),
// built through the file-layout reader.
std::string loaded(const image& file_image) {
  auto bytes = file_image.read(0, file_image.header().size_of_image);
  REQUIRE(bytes.ok());
  return *bytes;
}

// A reader over a loaded image in which the pages in `missing` are not present.
toolhost::pe::read_fn memory_reader(std::string bytes, std::vector<uint32_t> missing = {}) {
  return [bytes = std::move(bytes), missing](uint64_t offset, std::span<uint8_t> out) -> size_t {
    size_t n = 0;
    while (n < out.size() && offset + n < bytes.size()) {
      const uint64_t page = (offset + n) & ~0xfffull;
      if (std::find(missing.begin(), missing.end(), page) != missing.end()) break;
      out[n] = static_cast<uint8_t>(bytes[offset + n]);
      ++n;
    }
    return n;
  };
}

std::string register_name(uint8_t r) {
  static const char* const names[] = {"RAX", "RCX", "RDX", "RBX", "RSP", "RBP", "RSI", "RDI",
                                      "R8",  "R9",  "R10", "R11", "R12", "R13", "R14", "R15"};
  return names[r & 15];
}

// An unwind code in llvm-readobj's words.
std::string readobj_text(const toolhost::pe::unwind_code& c) {
  using namespace toolhost::pe;
  switch (c.op) {
    case kPushNonvol: return "PUSH_NONVOL reg=" + register_name(c.info);
    case kAllocSmall: return absl::StrFormat("ALLOC_SMALL size=%u", c.value);
    case kAllocLarge: return absl::StrFormat("ALLOC_LARGE size=%u", c.value);
    case kSetFpreg: return "SET_FPREG";
    case kSaveNonvol: return absl::StrFormat("SAVE_NONVOL reg=%s offset=0x%X", register_name(c.info), c.value);
    default: return absl::StrFormat("op %u", c.op);
  }
}

}  // namespace

TEST_CASE("headers and sections match llvm-readobj", "[pe]") {
  for (const char* file : kImages) {
    INFO(file);
    const image img = open(file);
    const auto h = oracle::file_headers(oracle::fixture(file));
    CHECK(img.header().machine == h.machine);
    CHECK(img.header().timestamp == h.timestamp);
    CHECK(img.header().characteristics == h.characteristics);
    CHECK(img.header().pe32_plus == (h.magic == 0x20b));
    CHECK(img.header().entry_point == h.entry);
    CHECK(img.header().image_base == h.image_base);
    CHECK(img.header().size_of_image == h.size_of_image);
    CHECK(img.header().size_of_headers == h.size_of_headers);
    CHECK(img.header().checksum == h.checksum);
    CHECK(img.header().subsystem == h.subsystem);
    CHECK(img.header().dll_characteristics == h.dll_characteristics);
    const auto want = oracle::sections(oracle::fixture(file));
    REQUIRE(img.sections().size() == want.size());
    REQUIRE(want.size() == h.section_count);
    for (size_t i = 0; i < want.size(); ++i) {
      const auto& s = img.sections()[i];
      CHECK(s.name == want[i].name);
      CHECK(s.virtual_address == want[i].virtual_address);
      CHECK(s.virtual_size == want[i].virtual_size);
      CHECK(s.raw_size == want[i].raw_size);
      CHECK(s.raw_offset == want[i].raw_offset);
      CHECK(s.characteristics == want[i].characteristics);
    }
  }
}

TEST_CASE("exports match llvm-objdump, forwarders and ordinal-only exports included", "[pe]") {
  for (const char* file : kImages) {
    INFO(file);
    const image img = open(file);
    uint32_t base = 0;
    const auto want = oracle::exports(oracle::fixture(file), &base);
    auto table = img.exports();
    INFO(table.status().message());
    REQUIRE(table.ok());
    CHECK(table->ordinal_base == base);
    CHECK(table->dll_name == file);
    REQUIRE(table->entries.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK(table->entries[i].ordinal == want[i].ordinal);
      CHECK(table->entries[i].name == want[i].name);
      CHECK(table->entries[i].rva == want[i].rva);
      CHECK(table->entries[i].forwarder == want[i].forwarder);
    }
  }
  // The fixture has one of each kind the table can hold.
  const auto ws = image::open_file(oracle::fixture("wsfix.sys"))->exports();
  REQUIRE(ws.ok());
  CHECK(std::any_of(ws->entries.begin(), ws->entries.end(), [](const auto& e) { return !e.forwarder.empty(); }));
  CHECK(
      std::any_of(ws->entries.begin(), ws->entries.end(), [](const auto& e) { return e.name.empty() && e.rva != 0; }));
}

TEST_CASE("the CodeView record matches llvm-readobj and llvm-pdbutil", "[pe]") {
  for (const char* file : kImages) {
    INFO(file);
    const image img = open(file);
    auto cv = img.codeview();
    REQUIRE(cv.ok());
    REQUIRE(cv->has_value());
    const auto want = oracle::codeview(oracle::fixture(file));
    CHECK(std::vector<uint8_t>((*cv)->guid.begin(), (*cv)->guid.end()) == want.guid);
    CHECK((*cv)->age == want.age);
    CHECK((*cv)->pdb_path == want.pdb_path);
    CHECK((*cv)->pdb_name() == want.pdb_path);
    // llvm-pdbutil reads the same identity from the PDB: "GUID: {...}" and "Age: N".
    const std::string pdb = oracle::fixture(want.pdb_path);
    const auto summary = oracle::key_values(oracle::run(std::string(TOOLHOST_LLVM_PDBUTIL) + " dump -summary " + pdb));
    const std::string guid = oracle::first_value(summary, "GUID");
    CHECK((*cv)->guid_text() == guid);
    std::string key;
    for (char c : guid) {
      if (std::isxdigit(static_cast<unsigned char>(c))) key += c;
    }
    key += absl::StrFormat("%X", std::stoul(oracle::first_value(summary, "Age")));
    CHECK((*cv)->key() == key);
  }
  CHECK(toolhost::pe::image_key(0x547C9BF9, 0x7000) == "547C9BF97000");
}

TEST_CASE(".pdata and UNWIND_INFO match llvm-readobj", "[pe]") {
  const image img = open("wsfix.sys");
  const auto want = oracle::unwind(oracle::fixture("wsfix.sys"));
  auto table = img.runtime_functions();
  REQUIRE(table.ok());
  REQUIRE(!want.empty());
  REQUIRE(table->size() == want.size());
  const uint64_t base = img.header().image_base;
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("function " << i);
    const auto& f = (*table)[i];
    CHECK(f.begin + base == want[i].start);
    CHECK(f.end + base == want[i].end);
    CHECK(f.unwind_info + base == want[i].unwind_info);
    auto info = img.unwind(f.unwind_info);
    REQUIRE(info.ok());
    CHECK(info->version == want[i].version);
    CHECK(info->flags == want[i].flags);
    CHECK(info->prolog_size == want[i].prolog_size);
    CHECK((info->frame_register == 0 ? std::string("-") : register_name(info->frame_register)) ==
          want[i].frame_register);
    REQUIRE(info->codes.size() == want[i].codes.size());
    for (size_t c = 0; c < want[i].codes.size(); ++c) {
      CHECK(info->codes[c].prolog_offset == want[i].codes[c].prolog_offset);
      CHECK(readobj_text(info->codes[c]) == want[i].codes[c].text);
    }
    // Every address inside the function finds it; the byte after it finds the next or nothing.
    auto inside = img.function_entry(f.begin + (f.end - f.begin) / 2);
    REQUIRE(inside.ok());
    REQUIRE(inside->has_value());
    CHECK((*inside)->begin == f.begin);
  }
  auto outside = img.function_entry(img.header().size_of_headers - 1);
  REQUIRE(outside.ok());
  CHECK(!outside->has_value());
  // A 32-bit image has no x64 unwind table.
  auto none = open("wsdrv32.dll").runtime_functions();
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("a loaded image in memory reads like the file, and a missing page is a hole", "[pe]") {
  const image file_image = open("wsfix.sys");
  const std::string memory = loaded(file_image);
  auto mem = image::from_memory("wsfix", memory_reader(memory));
  REQUIRE(mem.ok());
  CHECK(mem->image_layout() == toolhost::pe::layout::memory);
  CHECK(mem->header().size_of_image == file_image.header().size_of_image);
  CHECK(mem->exports()->entries.size() == file_image.exports()->entries.size());
  CHECK((*mem->codeview())->key() == (*file_image.codeview())->key());
  CHECK(mem->runtime_functions()->size() == file_image.runtime_functions()->size());

  // .pdata's page paged out: the exception directory is a hole, the rest still reads.
  const auto* pdata = file_image.find_section(".pdata");
  REQUIRE(pdata != nullptr);
  auto holed = image::from_memory("wsfix", memory_reader(memory, {pdata->virtual_address}));
  REQUIRE(holed.ok());
  auto functions = holed->runtime_functions();
  REQUIRE(!functions.ok());
  CHECK(toolhost::pe::is_hole(functions.status()));
  CHECK(std::string(functions.status().message()).find(absl::StrFormat("RVA 0x%x", pdata->virtual_address)) !=
        std::string::npos);
  CHECK(holed->exports().ok());
  CHECK(holed->codeview().ok());

  // Without the header page there is no image to read.
  auto headless = image::from_memory("wsfix", memory_reader(memory, {0}));
  REQUIRE(!headless.ok());
  CHECK(toolhost::pe::is_hole(headless.status()));
}

TEST_CASE("truncated and bit-flipped images give errors naming the image, never a crash", "[pe]") {
  const std::string path = oracle::fixture("wsfix.sys");
  auto whole = image::open_file(path);
  REQUIRE(whole.ok());
  const std::string bytes = whole->read(0, whole->header().size_of_headers).value();
  std::string file;
  {
    FILE* f = std::fopen(path.c_str(), "rb");
    REQUIRE(f != nullptr);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) file.append(buffer, n);
    std::fclose(f);
  }
  auto exercise = [](const image& img) {
    (void)img.exports();
    (void)img.codeview();
    if (auto fns = img.runtime_functions(); fns.ok()) {
      for (const auto& f : *fns) (void)img.unwind(f.unwind_info);
    }
  };
  for (size_t cut = 0; cut < file.size(); cut += 7) {
    auto img = image::from_bytes(file.substr(0, cut), "cut.sys");
    if (!img.ok()) {
      CHECK(std::string(img.status().message()).rfind("cut.sys: ", 0) == 0);
      continue;
    }
    exercise(*img);
  }
  std::mt19937 rng(18);
  for (int round = 0; round < 3000; ++round) {
    std::string mutated = file;
    for (int flips = 0; flips < 4; ++flips) {
      const size_t at = rng() % std::min<size_t>(mutated.size(), 0x1000 + (round % 2) * mutated.size());
      mutated[at] = static_cast<char>(mutated[at] ^ (1u << (rng() % 8)));
    }
    auto img = image::from_bytes(std::move(mutated), "flipped.sys");
    if (!img.ok()) {
      CHECK(std::string(img.status().message()).find("flipped.sys") != std::string::npos);
      continue;
    }
    exercise(*img);
  }
  CHECK(image::open_file(path + ".missing").status().code() == absl::StatusCode::kNotFound);
}
