// libFuzzer: a PDB of arbitrary bytes through every entry point of toolhost::pdb (open, the
// symbol index, type lookups and dt over the types found).
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <toolhost/pdb/pdb_file.hpp>
#include <toolhost/types/dt.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader maps a file, so the input goes through one (per process, rewritten each run).
  static const std::string path = "/tmp/toolhost-fuzz-pdb-" + std::to_string(getpid()) + ".pdb";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto pdb = toolhost::pdb::pdb_file::open(path);
  if (!pdb.ok()) return 0;
  // By name through the publics' and globals' hashes first, before any index exists.
  (void)(*pdb)->lookup("main");
  (void)(*pdb)->lookup("WsTouch");
  if (auto index = (*pdb)->symbols(); index.ok()) {
    (void)(*index)->find("main");
    (void)(*index)->nearest(0x1000);
    (*index)->match("*", [](const toolhost::pdb::symbol&) { return true; });
  }
  const auto& types = (*pdb)->types();
  size_t n = 0;
  types.for_each_named([&](std::string_view, toolhost::types::type_id id) {
    toolhost::types::dt_request r{types, id, "fuzz!t"};
    r.options.depth = 2;
    r.options.max_lines = 200;
    (void)toolhost::types::render_dt(r);
    return ++n < 32;
  });
  return 0;
}
