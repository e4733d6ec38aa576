// toolhost::pdb: a Microsoft PDB on LLVM's native reader (Debian's llvm-14-dev, linked
// statically into the plugins that use this library; never into the host).
//
//   auto pdb = toolhost::pdb::pdb_file::open("wsfix.pdb");
//   if (!pdb.ok()) return pdb.status();
//   if (auto s = (*pdb)->check_identity(image_guid, image_age); !s.ok()) ...;  // names both
//   auto index = (*pdb)->symbols();            // publics, globals, procedures: built on first use
//   const auto& types = (*pdb)->types();       // toolhost::types::type_table, resolved on demand
//
// Opening reads only the MSF superblock, the stream directory and the PDB info stream. The
// symbol index is built the first time it is asked for (the publics, the globals and the module
// streams' procedures; not the type stream); types are read one record at a time when asked for
// by name, through the TPI hash. A 30 MB kernel PDB is never read whole for one lookup: the file
// is memory-mapped and only the pages of the streams used are touched.
//
// Every error names the file. A pdb_file is safe to use from several threads.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <toolhost/types/type.hpp>

namespace toolhost::pdb {

struct identity {
  std::array<uint8_t, 16> guid{};  // as stored (Data1..3 little-endian, then Data4)
  uint32_t age = 0;                // the DBI stream's age: what the image's CodeView record carries
  uint32_t info_age = 0;           // the PDB info stream's age
  std::string guid_text() const;   // "{F59A9BF2-7A70-4062-4C4C-44205044422E}"
};

struct symbol {
  std::string_view name;  // held by the symbol_index
  uint32_t rva = 0;
  uint32_t size = 0;  // a procedure's code size; 0 when unknown
  enum class kind : uint8_t { function, data, other } k = kind::other;
};

// A symbol that holds its own name.
struct owned_symbol {
  std::string name;
  uint32_t rva = 0;
  uint32_t size = 0;
  symbol::kind k = symbol::kind::other;
};

// The module's symbols by address and by name.
class symbol_index {
 public:
  // `by_rva` may hold duplicates (a public and its procedure); they are merged. The names'
  // bytes live in `names`, which the index keeps.
  symbol_index(std::vector<symbol> by_rva, std::vector<std::unique_ptr<char[]>> names);
  size_t size() const { return by_rva_.size(); }
  const std::vector<symbol>& all() const { return by_rva_; }
  // Exact name, then case-insensitive.
  const symbol* find(std::string_view name) const;
  // The function whose extent holds `rva`, else the nearest symbol at or below it.
  const symbol* nearest(uint32_t rva) const;
  const symbol* following(uint32_t rva) const;
  // A procedure whose [rva, rva + size) holds `rva`.
  const symbol* function_at(uint32_t rva) const;
  // Names matching `pattern` (* and ?, case-insensitive): a prefix before the first wildcard is
  // looked up in the sorted name list, so "Nt*" does not scan everything.
  void match(std::string_view pattern, const std::function<bool(const symbol&)>& visit) const;

 private:
  std::vector<std::unique_ptr<char[]>> storage_;  // the names' bytes
  void build_names() const;                       // the by-name side, made on the first lookup by name

  std::vector<symbol> by_rva_;  // sorted by rva, then name
  mutable std::once_flag names_once_;
  mutable std::vector<uint32_t> by_name_;  // indexes into by_rva_, sorted by lower-cased name
  mutable std::unique_ptr<char[]> lower_storage_;
  mutable std::vector<std::string_view> lower_names_;             // by_rva_ order, in lower_storage_
  mutable std::unordered_map<std::string_view, uint32_t> exact_;  // a name's first entry in by_rva_
  std::vector<uint32_t> functions_;                               // indexes of sized procedures, sorted by rva
};

class pdb_file {
 public:
  static absl::StatusOr<std::unique_ptr<pdb_file>> open(const std::filesystem::path& path);
  ~pdb_file();
  pdb_file(const pdb_file&) = delete;
  pdb_file& operator=(const pdb_file&) = delete;

  const std::string& path() const;
  const pdb::identity& id() const;
  // The GUID equals and the age equals the image's; otherwise an error that names both.
  absl::Status check_identity(const std::array<uint8_t, 16>& guid, uint32_t age) const;
  // 0x8664, 0x14c, ... from the DBI stream.
  uint16_t machine() const;
  // True when module streams hold procedures (a private PDB); false for a stripped public one.
  bool has_private_symbols() const;

  absl::StatusOr<const symbol_index*> symbols() const;
  // One symbol by name. Before symbols() has been built this asks the publics' and globals'
  // name hashes and reads only the records in one bucket (and, for a procedure, one record of
  // its module), so the first `x`/`bp` by name does not index the whole file.
  std::optional<owned_symbol> lookup(std::string_view name) const;
  const types::type_table& types() const;

 private:
  pdb_file();
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace toolhost::pdb
