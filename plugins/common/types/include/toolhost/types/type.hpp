// toolhost::types: a neutral model of C types, whatever debug format they came from (a PDB's
// TPI stream, DWARF), so that one `dt` serves both worlds.
//
// A source exposes its types through `type_table`: ids it hands out, `get` to see a type,
// `find` by name and `for_each_named` to list them. Ids are dense small integers chosen by the
// table; a table may make types on demand (a PDB is read lazily), but once `get(id)` returned a
// type, the reference stays valid and the type never changes for the table's lifetime.
// `type_store` is the container a source can build its table on.
//
//   const types::type_table& t = ...;
//   if (auto id = t.find("_EPROCESS")) {
//     const types::type& ep = t.get(*id);   // kind::structure, size 0xa40, members in order
//   }
//
// Conventions, the same for every source:
//  - typedefs are kept (kind::alias) where the format has them (DWARF); `strip_aliases` walks
//    through them. PDB member types have none.
//  - cv-qualifiers are not modelled: a source strips const and volatile.
//  - a bitfield member has bit_length > 0; its storage unit of get(member.type).size bytes is at
//    `offset`, and the field is bits [bit_position, bit_position + bit_length) of it (LSB 0).
//  - an anonymous union or struct inside a struct is either flattened into the parent (as
//    Microsoft's PDBs do) or kept as a member with an empty name (DWARF); both render.
//  - a forward reference the source could not resolve is a structure/union with
//    `incomplete = true` and no members.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace toolhost::types {

using type_id = uint32_t;
inline constexpr type_id kNoType = UINT32_MAX;

enum class kind : uint8_t {
  base,         // void, integers, characters, floating point, bool (see encoding)
  pointer,      // target: the pointee
  array,        // target: the element; count elements (0: unknown)
  structure,    // members
  union_,       // members, all usually at offset 0
  enumeration,  // enumerators; target: the underlying integer type (kNoType: size says it)
  function,     // target: the return type; parameters
  alias,        // a typedef; target: the aliased type
};

enum class encoding : uint8_t {
  none,     // void
  boolean,  // C++ bool, _Bool
  signed_integer,
  unsigned_integer,
  signed_char,    // char, signed char (shown as a number and a character)
  unsigned_char,  // unsigned char
  wide_char,      // wchar_t, char16_t
  floating,
};

struct member {
  std::string name;  // empty for an anonymous struct or union member
  uint64_t offset = 0;
  type_id type = kNoType;
  uint8_t bit_position = 0;
  uint8_t bit_length = 0;   // 0: not a bitfield
  bool base_class = false;  // an inherited base (C++); `name` is the base's type name
};

struct enumerator {
  std::string name;
  int64_t value = 0;
};

struct type {
  kind k = kind::base;
  std::string
      name;  // "_EPROCESS", "ULONG" (an alias), "unsigned long" (a base type); "" for pointers, arrays, anonymous types
  uint64_t size = 0;              // bytes; 0 for void, functions and incomplete types
  encoding enc = encoding::none;  // base types only
  type_id target = kNoType;
  uint64_t count = 0;           // arrays
  bool incomplete = false;      // a declaration whose definition was not found
  std::vector<member> members;  // structures and unions, in declaration order
  std::vector<enumerator> enumerators;
  std::vector<type_id> parameters;  // functions
};

class type_table {
 public:
  virtual ~type_table() = default;
  // The type `id` stands for. `id` must come from this table.
  virtual const type& get(type_id id) const = 0;
  // A named structure, union, enumeration or alias; for several of one name, the complete one
  // with the largest size (a PDB can hold a header-local stub before the real type).
  virtual std::optional<type_id> find(std::string_view name) const = 0;
  // Calls `visit` for each named structure, union, enumeration and alias (each name once) until
  // it returns false.
  virtual void for_each_named(const std::function<bool(std::string_view name, type_id id)>& visit) const = 0;
  // 4 or 8: the target's pointer size.
  virtual uint32_t pointer_size() const = 0;
};

// Follows aliases to the type they name (at most 64 deep: a cycle ends there).
type_id strip_aliases(const type_table& table, type_id id);

// A growable set of types with stable references: what a source fills (eagerly or on demand).
class type_store {
 public:
  type_id add(type t) {
    types_.push_back(std::move(t));
    return static_cast<type_id>(types_.size() - 1);
  }
  type& at(type_id id) { return types_[id]; }
  const type& at(type_id id) const { return types_[id]; }
  size_t size() const { return types_.size(); }

 private:
  std::deque<type> types_;  // a deque keeps references valid as it grows
};

}  // namespace toolhost::types
