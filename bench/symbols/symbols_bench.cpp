// bench/symbols: how soon the debugger answers x, ln and dt on a large PDB after .reload, and
// what a lookup costs afterwards.
//   symbols_bench source OUT.c              writes the generated module's C source
//   symbols_bench measure IMAGE PDB-DIR N   prints "name value unit" lines
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <absl/strings/str_format.h>
#include <toolhost/pdb/pdb_file.hpp>
#include <toolhost/sdk/json.hpp>
#include <toolhost/types/dt.hpp>

#include "dump_factory.hpp"
#include "kernel_memory.hpp"
#include "tools.hpp"

namespace w = toolhost::test::windows;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int kFunctions = 100000;
constexpr int kTypes = 10000;
constexpr uint64_t kBase = 0xfffff80010000000;
constexpr uint64_t kList = 0xfffff80000050000;

int write_source(const std::string& path) {
  std::ofstream out(path);
  out << "typedef unsigned long ULONG;\ntypedef unsigned long long ULONGLONG;\n";
  for (int i = 0; i < kTypes; ++i) {
    out << absl::StrFormat(
        "typedef struct _BIG_TYPE_%05d { ULONG Id; ULONG Flags : 3; ULONG Rest : 29; ULONGLONG Key; "
        "struct _BIG_TYPE_%05d *Next; unsigned char Name[%d]; } BIG_TYPE_%05d;\n",
        i, i, 8 + i % 8, i);
  }
  for (int i = 0; i < kFunctions; ++i) out << absl::StrFormat("int BigFunction%06d(int a) { return a + %d; }\n", i, i);
  out << "void BigEntry(void) {}\n";
  return out ? 0 : 1;
}

const toolhost_debug_target_factory_t* dump_factory() { return &toolhost::dump_backend::factory(); }

std::string text_of(const toolhost::sdk::result& r) {
  auto doc = toolhost::sdk::parse_json(r.to_json());
  std::string t;
  for (const auto& b : (*doc)["content"].GetArray()) t += b["text"].GetString();
  return t;
}

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

// A fresh debugger on the dump, `.reload`ed; the time `line` then takes (PDB opened and indexed
// on the way).
double first_answer(const std::string& dump, const std::string& pdb_dir, const std::string& line,
                    const std::string& expect) {
  toolhost::debugger::debugger_tools tools([](const std::string& n) { return n == "dump" ? dump_factory() : nullptr; },
                                           toolhost::debugger::launch_settings{.symbol_path = pdb_dir});
  (void)tools.open("dump", dump, "");
  (void)tools.command(".reload", 10000, "text", [] { return false; });
  const auto t = clock_type::now();
  const std::string answer = text_of(tools.command(line, 60000, "text", [] { return false; }));
  const double ms = ms_since(t);
  if (answer.find(expect) == std::string::npos) {
    std::fprintf(stderr, "symbols_bench: '%s' answered:\n%s\n", line.c_str(), answer.c_str());
    std::exit(1);
  }
  return ms;
}

int measure(const std::string& image, const std::string& pdb_dir, int lookups) {
  w::kernel_memory k;
  std::vector<w::kernel_module> modules = {{image, kBase, "big.dll", "\\SystemRoot\\system32\\big.dll"}};
  k.load_image(modules[0]);
  k.module_list(kList, kList + 0x1000, modules);
  const std::string dump =
      (std::filesystem::temp_directory_path() / ("toolhost-symbols-bench-" + std::to_string(getpid()) + ".dmp"))
          .string();
  if (!k.write_dump(dump, kList, kList).ok()) return 1;

  auto pdb = toolhost::pdb::pdb_file::open(pdb_dir + "/big.pdb");
  if (!pdb.ok()) return 1;
  const auto* index = *(*pdb)->symbols();
  const auto* probe = index->find("BigFunction050000");
  if (probe == nullptr) return 1;
  const uint64_t address = kBase + probe->rva + 2;

  std::printf("first_x %.2f ms\n", first_answer(dump, pdb_dir, "x big!BigFunction050000", "big!BigFunction050000"));
  std::printf("first_ln %.2f ms\n",
              first_answer(dump, pdb_dir, absl::StrFormat("ln %x", address), "big!BigFunction050000+0x2"));
  std::printf("first_dt %.2f ms\n",
              first_answer(dump, pdb_dir, "dt big!_BIG_TYPE_05000", "Next             : Ptr64 _BIG_TYPE_05000"));

  // Later lookups, on the loaded PDB: by name, by address, a type by name (each a different one).
  std::vector<std::string> names;
  for (int i = 0; i < lookups; ++i) names.push_back(absl::StrFormat("BigFunction%06d", (i * 7919) % kFunctions));
  auto t = clock_type::now();
  size_t found = 0;
  for (const auto& n : names) found += index->find(n) != nullptr;
  const double by_name = ms_since(t) * 1000 / lookups;
  t = clock_type::now();
  for (int i = 0; i < lookups; ++i) found += index->nearest(probe->rva + static_cast<uint32_t>(i % 4096)) != nullptr;
  const double by_address = ms_since(t) * 1000 / lookups;
  // Types: each name the first time (through the type stream's hash), then again.
  const auto& types = (*pdb)->types();
  std::vector<std::string> type_names;
  for (int i = 0; i < kTypes; ++i) type_names.push_back(absl::StrFormat("_BIG_TYPE_%05d", (i * 7919) % kTypes));
  t = clock_type::now();
  for (const auto& n : type_names) found += types.find(n).has_value();
  const double type_first = ms_since(t) * 1000 / kTypes;
  t = clock_type::now();
  for (int i = 0; i < lookups; ++i) found += types.find(type_names[i % kTypes]).has_value();
  const double type_again = ms_since(t) * 1000 / lookups;
  if (found != 3u * static_cast<size_t>(lookups) + kTypes) return 1;
  std::printf("lookup_name %.3f us\nlookup_address %.3f us\nlookup_type_first %.3f us\nlookup_type %.3f us\n", by_name,
              by_address, type_first, type_again);

  // The same through the command line, output and trailer included.
  toolhost::debugger::debugger_tools tools([](const std::string& n) { return n == "dump" ? dump_factory() : nullptr; },
                                           toolhost::debugger::launch_settings{.symbol_path = pdb_dir});
  (void)tools.open("dump", dump, "");
  // Past the first few lookups the PDB's index is built (once); the timing starts after that.
  for (int i = 0; i < 32; ++i)
    (void)tools.command("x big!BigFunction00000" + std::to_string(i % 10), 10000, "text", [] { return false; });
  const int commands = std::min(lookups, 2000);
  t = clock_type::now();
  for (int i = 0; i < commands; ++i) (void)tools.command("x big!" + names[i], 10000, "text", [] { return false; });
  std::printf("command_x %.3f us\n", ms_since(t) * 1000 / commands);
  std::printf("publics %zu\ntypes %zu\n", index->size(),
              toolhost::types::matching_type_names(types, "_BIG_TYPE_*").size());
  std::filesystem::remove(dump);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "source" && argc == 3) return write_source(argv[2]);
  if (mode == "measure" && argc == 5) return measure(argv[2], argv[3], std::atoi(argv[4]));
  std::fprintf(stderr, "usage: symbols_bench source OUT.c | measure IMAGE PDB-DIR LOOKUPS\n");
  return 2;
}
