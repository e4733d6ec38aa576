// DWARF types in toolhost::types' neutral model, made on demand: an id is handed out for a DIE
// without reading it, and the DIE becomes a type the first time `get` asks for it. A structure
// that points at itself therefore needs no recursion, and a hostile chain of DW_AT_type
// references costs at most 64 steps. Internal to toolhost::dwarf.
#pragma once

#include <elfutils/libdw.h>

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <toolhost/types/type.hpp>

namespace toolhost::dwarf {

class die_type_table final : public types::type_table {
 public:
  die_type_table(Dwarf* dwarf, uint32_t pointer_size);

  // The type `die` stands for, with const/volatile/restrict peeled off (void for nothing).
  types::type_id id_of(Dwarf_Die* die) const;
  // The type `die`'s DW_AT_type names (void when it has none).
  types::type_id type_of(Dwarf_Die* die) const;

  const types::type& get(types::type_id id) const override;
  std::optional<types::type_id> find(std::string_view name) const override;
  void for_each_named(const std::function<bool(std::string_view, types::type_id)>& visit) const override;
  uint32_t pointer_size() const override { return pointer_size_; }

 private:
  struct entry {
    std::optional<Dwarf_Die> die;  // nullopt: a type made here (void, an inner array dimension)
    bool made = false;
  };
  types::type_id add_made(types::type t) const;
  void make(types::type_id id) const;
  void make_from(types::type& t, Dwarf_Die* die) const;
  void index_names() const;
  const types::type* nested(types::type_id id) const;

  Dwarf* dwarf_;
  uint32_t pointer_size_;
  mutable types::type_store store_;
  mutable std::vector<entry> entries_;
  mutable std::unordered_map<const void*, types::type_id> by_die_;
  mutable types::type_id void_ = types::kNoType;
  mutable int depth_ = 0;
  // Named structures, unions, enumerations and typedefs: name -> DIEs (built on first use).
  mutable bool indexed_ = false;
  mutable std::map<std::string, std::vector<Dwarf_Die>, std::less<>> names_;
  mutable std::map<std::string, types::type_id, std::less<>> chosen_;
};

}  // namespace toolhost::dwarf
