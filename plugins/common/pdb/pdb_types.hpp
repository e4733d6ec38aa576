// The PDB's TPI stream as a toolhost::types::type_table (private to this library): records are
// turned into the neutral model one at a time, when a type is asked for.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <llvm/DebugInfo/PDB/Native/TpiStream.h>
#include <toolhost/types/type.hpp>

namespace toolhost::pdb::detail {

// `tpi` must outlive the table. `aliases` are the PDB's S_UDT typedef names and what they name.
std::unique_ptr<types::type_table> make_pdb_types(llvm::pdb::TpiStream& tpi, uint32_t pointer_size,
                                                  std::map<std::string, uint32_t> aliases);

}  // namespace toolhost::pdb::detail
