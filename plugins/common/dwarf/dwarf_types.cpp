#include "dwarf_types.hpp"

#include "die_attributes.hpp"

#include <dwarf.h>

namespace toolhost::dwarf {

namespace {

constexpr int kMaxChain = 64;

bool is_qualifier(int tag) {
  return tag == DW_TAG_const_type || tag == DW_TAG_volatile_type || tag == DW_TAG_restrict_type ||
         tag == DW_TAG_atomic_type || tag == DW_TAG_immutable_type || tag == DW_TAG_packed_type ||
         tag == DW_TAG_shared_type;
}

bool is_named_kind(int tag) {
  return tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type ||
         tag == DW_TAG_enumeration_type || tag == DW_TAG_typedef;
}

std::string name_of(Dwarf_Die* die) {
  const char* n = dwarf_diename(die);
  return n != nullptr ? n : "";
}

// DW_AT_data_member_location: a constant, or (DWARF 2) an expression DW_OP_plus_uconst N.
uint64_t member_offset(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  if (dwarf_attr(die, DW_AT_data_member_location, &attr) == nullptr) return 0;
  Dwarf_Word v = 0;
  if (dwarf_formudata(&attr, &v) == 0) return v;
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_getlocation(&attr, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_plus_uconst) return ops[0].number;
  return 0;
}

types::encoding encoding_of(uint64_t ate, uint64_t size) {
  switch (ate) {
    case DW_ATE_boolean: return types::encoding::boolean;
    case DW_ATE_float:
    case DW_ATE_complex_float:
    case DW_ATE_decimal_float: return types::encoding::floating;
    case DW_ATE_signed: return types::encoding::signed_integer;
    case DW_ATE_signed_char: return types::encoding::signed_char;
    case DW_ATE_unsigned_char: return types::encoding::unsigned_char;
    case DW_ATE_UTF: return size > 1 ? types::encoding::wide_char : types::encoding::unsigned_char;
    default: return types::encoding::unsigned_integer;
  }
}

}  // namespace

die_type_table::die_type_table(Dwarf* dwarf, uint32_t pointer_size) : dwarf_(dwarf), pointer_size_(pointer_size) {}

types::type_id die_type_table::add_made(types::type t) const {
  const types::type_id id = store_.add(std::move(t));
  entries_.push_back({std::nullopt, true});
  return id;
}

types::type_id die_type_table::id_of(Dwarf_Die* die) const {
  Dwarf_Die current = *die;
  for (int i = 0; i < kMaxChain && is_qualifier(dwarf_tag(&current)); ++i) {
    Dwarf_Attribute attr;
    Dwarf_Die next;
    if (dwarf_attr(&current, DW_AT_type, &attr) == nullptr || dwarf_formref_die(&attr, &next) == nullptr) {
      current = Dwarf_Die{};
      break;
    }
    current = next;
  }
  if (current.addr == nullptr || is_qualifier(dwarf_tag(&current))) {
    // const void, or a qualifier chain longer than any compiler writes.
    if (void_ == types::kNoType) void_ = add_made({.k = types::kind::base, .name = "void"});
    return void_;
  }
  auto [it, fresh] = by_die_.try_emplace(current.addr, types::kNoType);
  if (!fresh) return it->second;
  it->second = store_.add({});
  entries_.push_back({current, false});
  return it->second;
}

types::type_id die_type_table::type_of(Dwarf_Die* die) const {
  Dwarf_Attribute attr;
  Dwarf_Die target;
  if (dwarf_attr_integrate(die, DW_AT_type, &attr) == nullptr || dwarf_formref_die(&attr, &target) == nullptr) {
    Dwarf_Die none{};
    return id_of(&none);
  }
  return id_of(&target);
}

const types::type& die_type_table::get(types::type_id id) const {
  if (id < entries_.size() && !entries_[id].made) make(id);
  return store_.at(id);
}

void die_type_table::make(types::type_id id) const {
  entries_[id].made = true;  // first: a type that reaches itself sees it half made, never loops
  Dwarf_Die die = *entries_[id].die;
  types::type t;
  ++depth_;
  make_from(t, &die);
  --depth_;
  store_.at(id) = std::move(t);
}

const types::type* die_type_table::nested(types::type_id id) const {
  // Making a type can need another one made (an array's element size); past this depth the
  // answer is "unknown" rather than a deeper stack.
  if (depth_ > kMaxChain) return nullptr;
  return &get(types::strip_aliases(*this, id));
}

void die_type_table::make_from(types::type& t, Dwarf_Die* die) const {
  const int tag = dwarf_tag(die);
  t.name = name_of(die);
  const int size = dwarf_bytesize(die);
  t.size = size > 0 ? static_cast<uint64_t>(size) : 0;
  switch (tag) {
    case DW_TAG_base_type:
      t.k = types::kind::base;
      t.enc = encoding_of(unsigned_attr(die, DW_AT_encoding).value_or(DW_ATE_unsigned), t.size);
      return;
    case DW_TAG_unspecified_type: t.k = types::kind::base; return;
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
    case DW_TAG_ptr_to_member_type:
      t.k = types::kind::pointer;
      t.name.clear();
      if (t.size == 0) t.size = pointer_size_;
      t.target = type_of(die);
      return;
    case DW_TAG_typedef:
      t.k = types::kind::alias;
      t.target = type_of(die);
      return;
    case DW_TAG_subroutine_type: {
      t.k = types::kind::function;
      t.size = 0;
      t.target = type_of(die);
      Dwarf_Die child;
      if (dwarf_child(die, &child) == 0) {
        do {
          if (dwarf_tag(&child) == DW_TAG_formal_parameter) t.parameters.push_back(type_of(&child));
        } while (dwarf_siblingof(&child, &child) == 0);
      }
      return;
    }
    case DW_TAG_enumeration_type: {
      t.k = types::kind::enumeration;
      Dwarf_Attribute attr;
      Dwarf_Die under;
      t.target = dwarf_attr(die, DW_AT_type, &attr) != nullptr && dwarf_formref_die(&attr, &under) != nullptr
                     ? id_of(&under)
                     : types::kNoType;
      Dwarf_Die child;
      if (dwarf_child(die, &child) == 0) {
        do {
          if (dwarf_tag(&child) != DW_TAG_enumerator) continue;
          Dwarf_Attribute value;
          Dwarf_Sword v = 0;
          if (dwarf_attr(&child, DW_AT_const_value, &value) != nullptr) dwarf_formsdata(&value, &v);
          t.enumerators.push_back({name_of(&child), static_cast<int64_t>(v)});
        } while (dwarf_siblingof(&child, &child) == 0);
      }
      return;
    }
    case DW_TAG_array_type: {
      t.k = types::kind::array;
      t.name.clear();
      // One DW_TAG_subrange_type per dimension, outermost first: int a[2][3] is 2 of (3 of int).
      std::vector<uint64_t> counts;
      Dwarf_Die child;
      if (dwarf_child(die, &child) == 0) {
        do {
          const int ct = dwarf_tag(&child);
          if (ct != DW_TAG_subrange_type && ct != DW_TAG_enumeration_type) continue;
          uint64_t n = 0;
          if (auto c = unsigned_attr(&child, DW_AT_count)) {
            n = *c;
          } else if (auto u = unsigned_attr(&child, DW_AT_upper_bound)) {
            const uint64_t lower = unsigned_attr(&child, DW_AT_lower_bound).value_or(0);
            // An upper bound of -1 (all ones) is a flexible array member: no elements.
            n = *u >= lower && *u != UINT64_MAX && *u != 0xffffffffu ? *u - lower + 1 : 0;
          }
          counts.push_back(n);
          if (counts.size() >= 16) break;
        } while (dwarf_siblingof(&child, &child) == 0);
      }
      if (counts.empty()) counts.push_back(0);
      types::type_id element = type_of(die);
      const types::type* e = nested(element);
      const uint64_t element_size = e != nullptr ? e->size : 0;
      uint64_t inner_size = element_size;
      for (size_t i = counts.size(); i-- > 1;) {
        inner_size *= counts[i];
        element = add_made({.k = types::kind::array, .size = inner_size, .target = element, .count = counts[i]});
      }
      t.target = element;
      t.count = counts[0];
      if (t.size == 0) t.size = inner_size * counts[0];
      return;
    }
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type: {
      t.k = tag == DW_TAG_union_type ? types::kind::union_ : types::kind::structure;
      if (flag_attr(die, DW_AT_declaration)) {
        // A forward declaration: the definition elsewhere (another unit) of the same name.
        if (!t.name.empty()) {
          if (auto def = find(t.name); def) {
            const types::type* d = depth_ <= kMaxChain ? &get(*def) : nullptr;
            if (d != nullptr && d->k == t.k && !d->incomplete) {
              t = *d;
              return;
            }
          }
        }
        t.incomplete = true;
        return;
      }
      Dwarf_Die child;
      if (dwarf_child(die, &child) == 0) {
        do {
          const int ct = dwarf_tag(&child);
          if (ct != DW_TAG_member && ct != DW_TAG_inheritance) continue;
          if (flag_attr(&child, DW_AT_external) || flag_attr(&child, DW_AT_declaration)) continue;  // static members
          types::member m;
          m.type = type_of(&child);
          if (ct == DW_TAG_inheritance) {
            m.base_class = true;
            const types::type* base = nested(m.type);
            m.name = base != nullptr ? base->name : "";
          } else {
            m.name = name_of(&child);
          }
          m.offset = member_offset(&child);
          if (auto bits = unsigned_attr(&child, DW_AT_bit_size); bits && *bits > 0 && *bits <= 64) {
            m.bit_length = static_cast<uint8_t>(*bits);
            const types::type* storage_type = nested(m.type);
            uint64_t unit = storage_type != nullptr ? storage_type->size : 0;
            if (unit == 0 || unit > 16) unit = 4;
            if (auto data_bit = unsigned_attr(&child, DW_AT_data_bit_offset)) {
              // DWARF 4+: bits from the start of the structure; the field's storage unit is the
              // aligned unit of its type's size that holds its first bit.
              m.offset = *data_bit / (unit * 8) * unit;
              m.bit_position = static_cast<uint8_t>(*data_bit - m.offset * 8);  // < unit * 8 <= 128
            } else if (auto msb = unsigned_attr(&child, DW_AT_bit_offset)) {
              // DWARF 2/3: counted from the storage unit's most significant bit.
              const uint64_t storage = unsigned_attr(&child, DW_AT_byte_size).value_or(unit);
              const uint64_t lsb = storage * 8 >= *msb + *bits ? storage * 8 - *msb - *bits : 0;
              m.bit_position = static_cast<uint8_t>(lsb);
            }
          }
          t.members.push_back(std::move(m));
          if (t.members.size() >= 65536) break;
        } while (dwarf_siblingof(&child, &child) == 0);
      }
      return;
    }
    default:
      t.k = types::kind::base;
      if (t.name.empty()) t.name = "<unknown type>";
      return;
  }
}

void die_type_table::index_names() const {
  if (indexed_) return;
  indexed_ = true;
  // The main file's units, then the dwz supplementary file's (its partial units hold shared types).
  for (Dwarf* d : {dwarf_, dwarf_getalt(dwarf_)}) {
    if (d == nullptr) continue;
    Dwarf_CU* cu = nullptr;
    Dwarf_Die cudie, subdie;
    uint8_t unit_type = 0;
    while (dwarf_get_units(d, cu, &cu, nullptr, &unit_type, &cudie, &subdie) == 0) {
      Dwarf_Die* top = unit_type == DW_UT_type || unit_type == DW_UT_split_type ? &subdie : &cudie;
      Dwarf_Die child;
      if (unit_type == DW_UT_type || unit_type == DW_UT_split_type) {
        if (is_named_kind(dwarf_tag(top))) names_[name_of(top)].push_back(*top);
        continue;
      }
      if (dwarf_child(top, &child) != 0) continue;
      do {
        if (!is_named_kind(dwarf_tag(&child))) continue;
        const char* n = dwarf_diename(&child);
        if (n == nullptr || *n == '\0') continue;
        names_[n].push_back(child);
      } while (dwarf_siblingof(&child, &child) == 0);
    }
  }
}

std::optional<types::type_id> die_type_table::find(std::string_view name) const {
  if (auto it = chosen_.find(name); it != chosen_.end()) return it->second;
  index_names();
  auto it = names_.find(name);
  if (it == names_.end()) return std::nullopt;
  // The complete definition with the largest size; a structure before a typedef of its name.
  std::optional<Dwarf_Die> best;
  int best_rank = -1;
  for (Dwarf_Die die : it->second) {
    const bool declaration = flag_attr(&die, DW_AT_declaration);
    const int size = dwarf_bytesize(&die);
    const int rank = (declaration ? 0 : 1 << 30) + (dwarf_tag(&die) == DW_TAG_typedef ? 0 : 1 << 29) +
                     (size > 0 ? std::min(size, (1 << 28)) : 0);
    if (rank > best_rank) {
      best_rank = rank;
      best = die;
    }
  }
  if (!best) return std::nullopt;
  // Chosen before the type is made, so a declaration that looks its own name up finds itself.
  const types::type_id id = id_of(&*best);
  chosen_.emplace(std::string(name), id);
  return id;
}

void die_type_table::for_each_named(const std::function<bool(std::string_view, types::type_id)>& visit) const {
  index_names();
  for (const auto& [name, dies] : names_) {
    auto id = find(name);
    if (id && !visit(name, *id)) return;
  }
}

}  // namespace toolhost::dwarf
