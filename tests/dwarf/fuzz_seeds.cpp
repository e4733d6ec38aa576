// Writes the DWARF fuzzers' seeds from a real program: its .eh_frame (with its address and the
// entry of four functions) for fuzz_dwarf_cfi, and its DWARF sections for fuzz_dwarf_info, in
// the fuzzers' input formats. Run by the fuzz build; the seeds are made, never committed.
#include <cstdio>
#include <fstream>
#include <string>

#include <toolhost/elf/elf_file.hpp>

namespace {

void put32(std::string& out, uint64_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PROGRAM CFI_CORPUS_DIR INFO_CORPUS_DIR\n", argv[0]);
    return 2;
  }
  auto file = toolhost::elf::elf_file::open(argv[1]);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", std::string(file.status().message()).c_str());
    return 1;
  }
  auto bytes_of = [&](const toolhost::elf::section& s) { return std::string(file->bytes().substr(s.offset, s.size)); };
  std::string cfi, info;
  std::vector<uint64_t> entries;
  for (const auto& f : file->functions()) {
    if (entries.size() < 4) entries.push_back(f.address + 1);
  }
  entries.resize(4, 0);
  info += static_cast<char>(4);
  for (uint64_t e : entries) put32(info, e);
  static const char* const kInfo[] = {".debug_info",        ".debug_abbrev",   ".debug_line",     ".debug_str",
                                      ".debug_line_str",    ".debug_loclists", ".debug_rnglists", ".debug_addr",
                                      ".debug_str_offsets", ".debug_ranges",   ".debug_loc"};
  for (const auto& s : file->sections()) {
    if (s.name == ".eh_frame") {
      put32(cfi, (s.address - 0x1000) | 0x80000000u);
      for (uint64_t e : entries) put32(cfi, e);
      cfi += bytes_of(s);
    }
    for (size_t k = 0; k < std::size(kInfo); ++k) {
      if (s.name != kInfo[k]) continue;
      info += static_cast<char>(k);
      put32(info, s.size);
      info += bytes_of(s);
    }
  }
  std::ofstream(std::string(argv[2]) + "/seed-eh_frame", std::ios::binary) << cfi;
  std::ofstream(std::string(argv[3]) + "/seed-dwarf", std::ios::binary) << info;
  return 0;
}
