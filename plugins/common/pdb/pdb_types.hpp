// The PDB's TPI stream as a toolhost::types::type_table (private to this library): records are
// turned into the neutral model one at a time, when a type is asked for.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <llvm/DebugInfo/PDB/Native/TpiStream.h>
#include <toolhost/types/type.hpp>

namespace toolhost::pdb::detail {

// `tpi` must outlive the table. `aliases` gives the PDB's S_UDT typedef names and the type
// index each names; it is called once, the first time a name is not a type's own.
std::unique_ptr<types::type_table> make_pdb_types(llvm::pdb::TpiStream& tpi, uint32_t pointer_size,
                                                  std::function<std::map<std::string, uint32_t>()> aliases);

}  // namespace toolhost::pdb::detail
