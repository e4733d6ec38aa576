// The tests' oracles for PE images and PDBs: llvm-readobj-14, llvm-objdump-14 and
// llvm-pdbutil-14 run on the fixture files, their text parsed into plain values. Every fact a
// symbol test checks comes from here, never typed in by hand.
//
// Link `toolhost_windows_oracle` for the tool paths (TOOLHOST_LLVM_READOBJ, ...) and
// TOOLHOST_WINDOWS_FIXTURES (the folder of the built fixtures).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace toolhost::test::windows {

inline std::string fixture(const std::string& file) { return std::string(TOOLHOST_WINDOWS_FIXTURES) + "/" + file; }

// The standard output of `command` (through the shell); throws when it fails.
inline std::string run(const std::string& command) {
  FILE* p = popen((command + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot run " + command);
  std::string out;
  char buffer[65536];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, p)) > 0;) out.append(buffer, n);
  if (pclose(p) != 0) throw std::runtime_error("failed: " + command);
  return out;
}

// Calls visit(line) for each line of a tool's output, without the newline.
template <typename Visit>
void for_each_line(const std::string& text, Visit&& visit) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    visit(text.substr(start, end - start));
    start = end + 1;
  }
}

// "0x1F", "31", "2014-12-01 16:48:57 (0x547C9BF9)", "(0x140005000)": the number in it (the
// parenthesised hex one when there is one).
inline uint64_t number(const std::string& text) {
  static const std::regex paren(R"(\((0x[0-9A-Fa-f]+)\))");
  std::smatch m;
  if (std::regex_search(text, m, paren)) return std::strtoull(m[1].str().c_str(), nullptr, 16);
  return std::strtoull(text.c_str(), nullptr, 0);
}

// Every "Key: value" line, in order (keys repeat across blocks).
inline std::vector<std::pair<std::string, std::string>> key_values(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  static const std::regex line(R"(^\s*([A-Za-z][A-Za-z0-9 ]*?): (.*)$)");
  static const std::regex flags(R"(^\s*([A-Za-z][A-Za-z0-9]*) \[ (\(0x[0-9A-Fa-f]+\))$)");
  for_each_line(text, [&](const std::string& l) {
    std::smatch m;
    if (std::regex_match(l, m, line)) {
      out.emplace_back(m[1], m[2]);
    } else if (std::regex_match(l, m, flags)) {
      out.emplace_back(m[1], m[2]);  // "Characteristics [ (0x22)": a flag set and its value
    }
  });
  return out;
}

inline std::string first_value(const std::vector<std::pair<std::string, std::string>>& kv, const std::string& key) {
  for (const auto& [k, v] : kv) {
    if (k == key) return v;
  }
  throw std::runtime_error("the oracle output has no " + key);
}

struct readobj_headers {
  uint64_t machine, timestamp, characteristics, entry, image_base, size_of_image, size_of_headers, checksum, subsystem,
      dll_characteristics, section_count, magic;
};

inline readobj_headers file_headers(const std::string& path) {
  const auto kv = key_values(run(std::string(TOOLHOST_LLVM_READOBJ) + " --file-headers " + path));
  readobj_headers h{};
  h.machine = number(first_value(kv, "Machine"));
  h.timestamp = number(first_value(kv, "TimeDateStamp"));
  h.section_count = number(first_value(kv, "SectionCount"));
  h.magic = number(first_value(kv, "Magic"));
  h.entry = number(first_value(kv, "AddressOfEntryPoint"));
  h.image_base = number(first_value(kv, "ImageBase"));
  h.size_of_image = number(first_value(kv, "SizeOfImage"));
  h.size_of_headers = number(first_value(kv, "SizeOfHeaders"));
  h.checksum = number(first_value(kv, "Checksum"));
  h.subsystem = number(first_value(kv, "Subsystem"));
  // "Characteristics [ (0x22)": the first is the file header's, the second the optional header's.
  std::vector<uint64_t> ch;
  for (const auto& [k, v] : kv) {
    if (k == "Characteristics") ch.push_back(number(v));
  }
  h.characteristics = ch.size() > 0 ? ch[0] : 0;
  h.dll_characteristics = ch.size() > 1 ? ch[1] : 0;
  return h;
}

struct readobj_section {
  std::string name;
  uint64_t virtual_address, virtual_size, raw_size, raw_offset, characteristics;
};

inline std::vector<readobj_section> sections(const std::string& path) {
  const auto kv = key_values(run(std::string(TOOLHOST_LLVM_READOBJ) + " --sections " + path));
  std::vector<readobj_section> out;
  for (const auto& [k, v] : kv) {
    if (k == "Name") out.push_back({v.substr(0, v.find(" (")), 0, 0, 0, 0, 0});
    if (out.empty()) continue;
    auto& s = out.back();
    if (k == "VirtualSize") s.virtual_size = number(v);
    if (k == "VirtualAddress") s.virtual_address = number(v);
    if (k == "RawDataSize") s.raw_size = number(v);
    if (k == "PointerToRawData") s.raw_offset = number(v);
    if (k == "Characteristics") s.characteristics = number(v);
  }
  return out;
}

struct objdump_export {
  uint32_t ordinal;
  uint64_t rva;  // 0 for a forwarder
  std::string name, forwarder;
};

// `llvm-objdump -p`'s export table (its empty ordinal slots left out).
inline std::vector<objdump_export> exports(const std::string& path, uint32_t* ordinal_base = nullptr) {
  const std::string text = run(std::string(TOOLHOST_LLVM_OBJDUMP) + " -p " + path);
  std::vector<objdump_export> out;
  static const std::regex base(R"(Ordinal base: (\d+))");
  static const std::regex row(R"(^\s+(\d+)\s+(0x[0-9a-fA-F]+|0)?\s*(\S*)(?: \(forwarded to (\S+)\))?\s*$)");
  std::smatch m;
  if (ordinal_base != nullptr && std::regex_search(text, m, base)) *ordinal_base = std::stoul(m[1]);
  const size_t table = text.find("Export Table:");
  if (table == std::string::npos) return out;
  size_t start = text.find("Ordinal      RVA", table);
  start = text.find('\n', start) + 1;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(start, end - start);
    if (!std::regex_match(l, m, row)) break;
    objdump_export e{static_cast<uint32_t>(std::stoul(m[1])),
                     m[2].matched ? std::strtoull(m[2].str().c_str(), nullptr, 0) : 0, m[3], m[4]};
    if (e.rva != 0 || !e.name.empty()) out.push_back(e);
    start = end + 1;
  }
  return out;
}

struct readobj_codeview {
  std::vector<uint8_t> guid;
  uint32_t age = 0;
  std::string pdb_path;
};

inline readobj_codeview codeview(const std::string& path) {
  const auto kv = key_values(run(std::string(TOOLHOST_LLVM_READOBJ) + " --coff-debug-directory " + path));
  readobj_codeview cv;
  const std::string guid = first_value(kv, "PDBGUID");  // "(F2 9B A0 ... 2E)"
  static const std::regex byte(R"([0-9A-Fa-f]{2})");
  for (auto it = std::sregex_iterator(guid.begin(), guid.end(), byte); it != std::sregex_iterator(); ++it) {
    cv.guid.push_back(static_cast<uint8_t>(std::stoul(it->str(), nullptr, 16)));
  }
  cv.age = static_cast<uint32_t>(number(first_value(kv, "PDBAge")));
  cv.pdb_path = first_value(kv, "PDBFileName");
  return cv;
}

struct readobj_unwind_code {
  uint32_t prolog_offset;
  std::string text;  // "ALLOC_SMALL size=32", "PUSH_NONVOL reg=RBX"
};

struct readobj_function {
  uint64_t start, end, unwind_info;  // virtual addresses (ImageBase + RVA)
  uint32_t version, flags, prolog_size;
  std::string frame_register;
  std::vector<readobj_unwind_code> codes;
};

inline std::vector<readobj_function> unwind(const std::string& path) {
  const std::string text = run(std::string(TOOLHOST_LLVM_READOBJ) + " --unwind " + path);
  std::vector<readobj_function> out;
  static const std::regex field(
      R"(^\s+(StartAddress|EndAddress|UnwindInfoAddress|Version|PrologSize|FrameRegister): (.*)$)");
  static const std::regex flags(R"(^\s+Flags \[ \((0x[0-9A-Fa-f]+)\))");
  static const std::regex code_line(R"(^\s+(0x[0-9A-Fa-f]+): (.*)$)");
  for_each_line(text, [&](const std::string& l) {
    std::smatch m;
    if (std::regex_match(l, m, field)) {
      const std::string k = m[1], v = m[2];
      if (k == "StartAddress") out.push_back({number(v), 0, 0, 0, 0, 0, "", {}});
      if (out.empty()) return;
      auto& f = out.back();
      if (k == "EndAddress") f.end = number(v);
      if (k == "UnwindInfoAddress") f.unwind_info = number(v);
      if (k == "Version") f.version = static_cast<uint32_t>(number(v));
      if (k == "PrologSize") f.prolog_size = static_cast<uint32_t>(number(v));
      if (k == "FrameRegister") f.frame_register = v;
    } else if (std::regex_search(l, m, flags) && !out.empty()) {
      out.back().flags = static_cast<uint32_t>(std::stoul(m[1], nullptr, 16));
    } else if (std::regex_match(l, m, code_line) && !out.empty()) {
      out.back().codes.push_back({static_cast<uint32_t>(std::stoul(m[1], nullptr, 16)), m[2]});
    }
  });
  return out;
}

// ---- llvm-pdbutil -----------------------------------------------------------------------------

struct pdb_summary {
  std::string guid;  // "{F59A9BF2-...}"
  uint32_t age = 0;
};

inline pdb_summary summary(const std::string& pdb) {
  const auto kv = key_values(run(std::string(TOOLHOST_LLVM_PDBUTIL) + " dump -summary " + pdb));
  return {first_value(kv, "GUID"), static_cast<uint32_t>(std::stoul(first_value(kv, "Age")))};
}

// The virtual addresses of the PDB's section headers (segment N is element N-1).
inline std::vector<uint64_t> section_addresses(const std::string& pdb) {
  const std::string text = run(std::string(TOOLHOST_LLVM_PDBUTIL) + " dump -section-headers " + pdb);
  std::vector<uint64_t> out;
  static const std::regex va(R"(^\s+([0-9A-Fa-f]+) virtual address$)");
  for_each_line(text, [&](const std::string& l) {
    std::smatch m;
    if (std::regex_match(l, m, va)) out.push_back(std::stoull(m[1], nullptr, 16));
  });
  return out;
}

struct pdb_symbol {
  std::string kind;  // S_PUB32, S_GDATA32, S_GPROC32, S_LPROC32, S_UDT, ...
  std::string name;
  bool function = false;  // S_PUB32 flags = function
  uint32_t segment = 0, offset = 0, code_size = 0;
  uint32_t type = 0;  // S_UDT original type
};

// The records `llvm-pdbutil dump <option>` lists: "-publics", "-globals", "-symbols".
inline std::vector<pdb_symbol> pdb_symbols(const std::string& pdb, const std::string& option) {
  const std::string text = run(std::string(TOOLHOST_LLVM_PDBUTIL) + " dump " + option + " " + pdb);
  std::vector<pdb_symbol> out;
  static const std::regex head(R"(^\s+\d+ \| (S_[A-Z0-9_]+) \[size = \d+\](?: `(.*)`)?$)");
  static const std::regex addr(R"(addr = ([0-9]{4}):([0-9]+))");
  static const std::regex size(R"(code size = ([0-9]+))");
  static const std::regex original(R"(original type = (0x[0-9A-Fa-f]+))");
  for_each_line(text, [&](const std::string& l) {
    std::smatch m;
    if (std::regex_match(l, m, head)) {
      out.push_back({m[1], m[2].matched ? m[2].str() : std::string()});
      return;
    }
    if (out.empty()) return;
    auto& s = out.back();
    if (l.find("flags = function") != std::string::npos) s.function = true;
    if (std::regex_search(l, m, addr)) {
      s.segment = static_cast<uint32_t>(std::stoul(m[1]));
      s.offset = static_cast<uint32_t>(std::stoul(m[2]));
    }
    if (std::regex_search(l, m, size)) s.code_size = static_cast<uint32_t>(std::stoul(m[1]));
    if (std::regex_search(l, m, original)) s.type = static_cast<uint32_t>(std::stoul(m[1], nullptr, 16));
  });
  return out;
}

// One record of `llvm-pdbutil dump -types`: its leaf kind, name and the lines under it.
struct pdb_type_record {
  std::string kind;  // LF_STRUCTURE, LF_POINTER, ...
  std::string name;
  std::vector<std::string> lines;
};

inline std::map<uint32_t, pdb_type_record> pdb_type_records(const std::string& pdb) {
  const std::string text = run(std::string(TOOLHOST_LLVM_PDBUTIL) + " dump -types " + pdb);
  std::map<uint32_t, pdb_type_record> out;
  static const std::regex head(R"(^\s+0x([0-9A-Fa-f]+) \| (LF_[A-Z0-9_]+) \[size = \d+\](?: `(.*)`)?$)");
  pdb_type_record* current = nullptr;
  for_each_line(text, [&](const std::string& l) {
    std::smatch m;
    if (std::regex_match(l, m, head)) {
      current = &out[static_cast<uint32_t>(std::stoul(m[1], nullptr, 16))];
      current->kind = m[2];
      current->name = m[3].matched ? m[3].str() : "";
    } else if (current != nullptr) {
      current->lines.push_back(l);
    }
  });
  return out;
}

}  // namespace toolhost::test::windows
