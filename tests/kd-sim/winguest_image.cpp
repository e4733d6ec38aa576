#include "winguest_image.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace kdsim {
namespace {

// QEMU's `info registers` as NAME -> value: "RAX=..." pairs, and for the segment lines
// ("GS =0010 fffff80312005248 ...") the selector as NAME and the base as NAME_BASE.
std::map<std::string, uint64_t> parse_registers(std::istream& in) {
  std::map<std::string, uint64_t> r;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > 4 && line[2] == ' ' && line[3] == '=') {  // "ES =0010 base limit flags"
      std::istringstream fields(line.substr(4));
      std::string selector, base;
      fields >> selector >> base;
      const std::string name = line.substr(0, 2);
      r[name] = std::strtoull(selector.c_str(), nullptr, 16);
      r[name + "_BASE"] = std::strtoull(base.c_str(), nullptr, 16);
      continue;
    }
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 >= word.size()) continue;
      char* end = nullptr;
      const uint64_t v = std::strtoull(word.c_str() + eq + 1, &end, 16);
      if (end != nullptr && *end == '\0') r[word.substr(0, eq)] = v;
    }
  }
  return r;
}

}  // namespace

std::string load_winguest_image(const std::string& dir, machine_image& image) {
  std::ifstream ram(dir + "/ram.bin", std::ios::binary);
  if (!ram) return "kd-sim: cannot read " + dir + "/ram.bin (make the snapshot with winguest-snapshot)";
  image.memory.assign(std::istreambuf_iterator<char>(ram), std::istreambuf_iterator<char>());
  if (image.memory.size() < (16u << 20)) return "kd-sim: " + dir + "/ram.bin holds less than 16 MiB";
  std::ifstream text(dir + "/registers.txt");
  if (!text) return "kd-sim: cannot read " + dir + "/registers.txt";
  const auto r = parse_registers(text);
  for (const char* need : {"RIP", "RSP", "CR3", "GS_BASE"}) {
    if (!r.contains(need)) return std::string("kd-sim: ") + dir + "/registers.txt has no " + need;
  }
  auto get = [&](const char* name) { return r.contains(name) ? r.at(name) : 0; };
  CONTEXT& c = image.context;
  c.ContextFlags = 0x0010001F;
  c.Rax = get("RAX"), c.Rbx = get("RBX"), c.Rcx = get("RCX"), c.Rdx = get("RDX");
  c.Rsi = get("RSI"), c.Rdi = get("RDI"), c.Rbp = get("RBP"), c.Rsp = get("RSP");
  c.R8 = get("R8"), c.R9 = get("R9"), c.R10 = get("R10"), c.R11 = get("R11");
  c.R12 = get("R12"), c.R13 = get("R13"), c.R14 = get("R14"), c.R15 = get("R15");
  c.Rip = get("RIP");
  c.EFlags = static_cast<uint32_t>(get("RFL"));
  c.SegCs = static_cast<uint16_t>(get("CS")), c.SegDs = static_cast<uint16_t>(get("DS"));
  c.SegEs = static_cast<uint16_t>(get("ES")), c.SegSs = static_cast<uint16_t>(get("SS"));
  c.SegFs = static_cast<uint16_t>(get("FS")), c.SegGs = static_cast<uint16_t>(get("GS"));
  KSPECIAL_REGISTERS& s = image.special;
  s.Cr0 = get("CR0"), s.Cr2 = get("CR2"), s.Cr3 = get("CR3"), s.Cr4 = get("CR4");
  s.KernelDr6 = 0xFFFF0FF0;
  s.KernelDr7 = 0x400;
  image.gs_base = get("GS_BASE");
  return {};
}

}  // namespace kdsim
