// A type_table that holds every type it knows: for sources that build their types at once (a
// small DWARF unit, tests) rather than on demand.
//
//   types::simple_table t(8);
//   auto u32 = t.add({.k = types::kind::base, .name = "unsigned int", .size = 4,
//                     .enc = types::encoding::unsigned_integer});
//   t.add({.k = types::kind::structure, .name = "_S", .size = 8, .members = {{"A", 0, u32}}});
#pragma once

#include <map>
#include <string>

#include "toolhost/types/type.hpp"

namespace toolhost::types {

class simple_table final : public type_table {
 public:
  explicit simple_table(uint32_t pointer_size) : pointer_size_(pointer_size) {}

  // Adds a type; a named structure, union, enumeration or alias becomes findable by name (the
  // complete one with the largest size wins).
  type_id add(type t) {
    const bool named = !t.name.empty() && (t.k == kind::structure || t.k == kind::union_ || t.k == kind::enumeration ||
                                           t.k == kind::alias);
    const std::string name = t.name;
    const bool complete = !t.incomplete;
    const uint64_t size = t.size;
    const type_id id = store_.add(std::move(t));
    if (named) {
      auto it = names_.find(name);
      if (it == names_.end()) {
        names_.emplace(name, id);
      } else {
        const type& old = store_.at(it->second);
        if ((complete && old.incomplete) || (complete == !old.incomplete && size > old.size)) it->second = id;
      }
    }
    return id;
  }
  // For building self-referencing types: change a type added before.
  type& at(type_id id) { return store_.at(id); }

  const type& get(type_id id) const override { return store_.at(id); }
  std::optional<type_id> find(std::string_view name) const override {
    auto it = names_.find(std::string(name));
    if (it == names_.end()) return std::nullopt;
    return it->second;
  }
  void for_each_named(const std::function<bool(std::string_view, type_id)>& visit) const override {
    for (const auto& [name, id] : names_) {
      if (!visit(name, id)) return;
    }
  }
  uint32_t pointer_size() const override { return pointer_size_; }

 private:
  uint32_t pointer_size_;
  type_store store_;
  std::map<std::string, type_id, std::less<>> names_;
};

}  // namespace toolhost::types
