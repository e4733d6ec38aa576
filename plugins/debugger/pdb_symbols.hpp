// Symbols and types of a PE module from its PDB (toolhost::pdb), and finding that PDB on the
// symbol path by the image's CodeView record (name, GUID, age): local folders and stores
// first, then symbol servers, each candidate's GUID and age checked before it is used.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <toolhost/pdb/pdb_file.hpp>
#include <toolhost/pe/image.hpp>
#include <toolhost/symbols/symbol_path.hpp>

#include "symbol_source.hpp"

namespace toolhost::debugger {

std::shared_ptr<const symbol_source> make_pdb_source(std::shared_ptr<const pdb::pdb_file> pdb);

struct pdb_search {
  const symbols::symbol_path& path;
  std::function<void(uint64_t, uint64_t, const std::string&)> progress;
  std::function<bool()> cancelled;
  std::chrono::milliseconds timeout{20000};
};

// The image's PDB from the symbol path, or why there is none (one sentence that says what to do).
absl::StatusOr<std::shared_ptr<const pdb::pdb_file>> find_pdb(const pe::codeview& cv, const pdb_search& search);

}  // namespace toolhost::debugger
