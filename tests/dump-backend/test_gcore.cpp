// A real core: gdb runs core_target, which fills memory and stops with SIGUSR1; gdb writes a
// core with `gcore` and prints every thread's registers. The dump backend must show the bytes
// the program wrote at the addresses it printed, and the registers gdb shows.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <toolhost/snapshot/session.hpp>
#include "open_dump.hpp"

namespace db = toolhost::dump_backend;

namespace {

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// "Thread N (... (LWP 1234) ...):" then "name  0xvalue  ..." lines.
std::map<int64_t, std::map<std::string, uint64_t>> parse_registers(const std::string& text) {
  std::map<int64_t, std::map<std::string, uint64_t>> threads;
  std::istringstream in(text);
  std::string line;
  int64_t current = -1;
  const std::regex thread_line(R"(^Thread \d+ \(.*LWP (\d+)\))");
  const std::regex reg_line(R"(^([a-z0-9_]+)\s+(0x[0-9a-f]+))");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, thread_line)) {
      current = std::stoll(m[1]);
    } else if (current >= 0 && std::regex_search(line, m, reg_line)) {
      threads[current][m[1]] = std::stoull(m[2], nullptr, 16);
    }
  }
  return threads;
}

}  // namespace

TEST_CASE("a gcore of a real program: memory and registers match what gdb shows", "[dump][gcore]") {
  const std::string dir = "/tmp/toolhost-gcore-" + std::to_string(::getpid());
  REQUIRE(std::system(("mkdir -p " + dir).c_str()) == 0);
  struct remove_dir {
    std::string path;
    ~remove_dir() { std::system(("rm -rf " + path).c_str()); }
  } cleanup{dir};  // also when a REQUIRE fails
  const std::string core = dir + "/core";
  const std::string addresses = dir + "/addresses";
  const std::string gdb_out = run_capture(
      "timeout 90 gdb -batch -nx -ex 'set pagination off' -ex 'set confirm off' -ex run -ex 'gcore " + core +
      "' -ex 'thread apply all info registers' -ex 'x/16xb $pc' -ex kill --args " TOOLHOST_CORE_TARGET " " + addresses +
      " 2>&1");
  INFO(gdb_out);
  REQUIRE(gdb_out.find("SIGUSR1") != std::string::npos);

  auto snap = db::open_dump(core);
  REQUIRE(snap.ok());
  toolhost_debug_target_t* t = toolhost::snapshots::make_target(std::move(*snap));

  // Memory: the bytes the program wrote at the addresses it printed.
  std::ifstream in(addresses);
  int region;
  std::string address_text;
  size_t size;
  int regions = 0;
  while (in >> region >> address_text >> size) {
    ++regions;
    const uint64_t address = std::stoull(address_text, nullptr, 16);
    std::vector<uint8_t> got(size);
    size_t done = 0;
    REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, address, got.data(), size, &done, nullptr) == TOOLHOST_OK);
    REQUIRE(done == size);
    size_t wrong = 0;
    for (size_t k = 0; k < size; ++k) wrong += got[k] != static_cast<uint8_t>((k * (region + 3) + region) & 0xff);
    CHECK(wrong == 0);
  }
  CHECK(regions == 3);

  // Registers: every thread, every register both sides know.
  const auto expected = parse_registers(gdb_out);
  REQUIRE(expected.size() == 2);
  std::string described;
  toolhost_writer_t w{&described, [](void* c, const char* d, size_t n) { static_cast<std::string*>(c)->append(d, n); }};
  t->describe(t, &w);
  CHECK(described.find("\"kind\":\"process\"") != std::string::npos);
  CHECK(described.find("core_target") != std::string::npos);  // the executable hint
  std::vector<std::string> names;
  const std::regex name_re("\"name\":\"([a-z0-9_]+)\"");
  for (std::sregex_iterator it(described.begin(), described.end(), name_re), end; it != end; ++it)
    names.push_back((*it)[1]);
  REQUIRE(names.size() == 26);
  for (const auto& [lwp, regs] : expected) {
    CAPTURE(lwp);
    std::vector<uint64_t> values(names.size());
    size_t done = 0;
    REQUIRE(t->read_registers(t, lwp, values.data(), values.size() * 8, &done, nullptr) == TOOLHOST_OK);
    int compared = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      auto it = regs.find(names[i]);
      if (it == regs.end()) continue;
      CAPTURE(names[i]);
      CHECK(values[i] == it->second);
      ++compared;
    }
    CHECK(compared >= 24);
  }

  // Code is not saved in a gcore (unmodified file mappings): it reads from the mapped files,
  // and shows what gdb shows at the current pc.
  {
    std::smatch m;
    const std::regex pc_line(R"(\n(0x[0-9a-f]+)[^:\n]*:((?:\s+0x[0-9a-f]{2}){8})\n[^\n]*:((?:\s+0x[0-9a-f]{2}){8}))");
    REQUIRE(std::regex_search(gdb_out, m, pc_line));
    const uint64_t pc = std::stoull(m[1], nullptr, 16);
    std::vector<uint8_t> expected;
    const std::string hex_bytes = std::string(m[2]) + std::string(m[3]);
    const std::regex byte_re("0x([0-9a-f]{2})");
    for (std::sregex_iterator it(hex_bytes.begin(), hex_bytes.end(), byte_re), end; it != end; ++it) {
      expected.push_back(static_cast<uint8_t>(std::stoul((*it)[1], nullptr, 16)));
    }
    REQUIRE(expected.size() == 16);
    std::vector<uint8_t> code(16);
    size_t got = 0;
    REQUIRE(t->read_memory(t, TOOLHOST_DT_VIRTUAL, pc, code.data(), code.size(), &got, nullptr) == TOOLHOST_OK);
    REQUIRE(got == 16);
    CHECK(code == expected);
  }

  // A dump reports its stop once and explains that it does not run.
  toolhost_dt_stop_t stop{};
  stop.struct_size = sizeof stop;
  REQUIRE(t->wait_stop(t, 0, &stop, nullptr) == TOOLHOST_OK);
  CHECK(stop.reason == TOOLHOST_DT_STOP_SIGNAL);
  CHECK(stop.code == SIGUSR1);
  std::string why;
  toolhost_writer_t e{&why, w.write};
  CHECK(t->resume(t, TOOLHOST_DT_CONTINUE, -1, &e) == TOOLHOST_ERR_UNSUPPORTED);
  CHECK(why.find("does not run") != std::string::npos);
  CHECK((t->capabilities(t) & TOOLHOST_DT_CAP_RUN_CONTROL) == 0);
  std::string modules;
  toolhost_writer_t mw{&modules, w.write};
  t->list_modules(t, &mw);
  CHECK(modules.find("libc") != std::string::npos);
  t->close(t);

  // Truncated copies of the core give errors that say so, and never crash.
  const std::string whole = [&] {
    std::ifstream f(core, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  REQUIRE(whole.size() > 0x10000);
  // The end of the last segment's data (gcore puts section headers after it, which a reader of
  // segments does not need).
  uint64_t data_end = 0;
  {
    uint64_t phoff = 0;
    uint16_t phentsize = 0, phnum = 0;
    std::memcpy(&phoff, whole.data() + 0x20, 8);
    std::memcpy(&phentsize, whole.data() + 0x36, 2);
    std::memcpy(&phnum, whole.data() + 0x38, 2);
    for (uint16_t i = 0; i < phnum; ++i) {
      uint64_t offset = 0, filesz = 0;
      std::memcpy(&offset, whole.data() + phoff + i * phentsize + 8, 8);
      std::memcpy(&filesz, whole.data() + phoff + i * phentsize + 32, 8);
      data_end = std::max(data_end, offset + filesz);
    }
  }
  REQUIRE(data_end > 0x10000);
  for (size_t cut :
       {size_t{10}, size_t{64}, size_t{300}, size_t{0x1000}, whole.size() / 2, static_cast<size_t>(data_end - 1)}) {
    CAPTURE(cut);
    const std::string part_path = dir + "/part";
    std::ofstream(part_path, std::ios::binary).write(whole.data(), static_cast<std::streamsize>(cut));
    auto part = db::open_dump(part_path);
    REQUIRE_FALSE(part.ok());
    const std::string message(part.status().message());
    CHECK(message.find(part_path) == 0);
    INFO(message);
    CHECK((message.find("truncated") != std::string::npos || message.find("ELF") != std::string::npos ||
           message.find("program header") != std::string::npos));
  }
}
