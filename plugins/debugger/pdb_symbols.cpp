#include "pdb_symbols.hpp"

#include <absl/strings/str_join.h>
#include <toolhost/symbols/symbol_locator.hpp>

#include "symbols.hpp"

namespace toolhost::debugger {

namespace {

class pdb_source final : public symbol_source {
 public:
  explicit pdb_source(std::shared_ptr<const pdb::pdb_file> pdb) : pdb_(std::move(pdb)) {}

  std::string status() const override { return "pdb symbols"; }
  std::string file() const override { return pdb_->path(); }

  std::optional<symbol_hit> find(std::string_view name) const override {
    // By name without building the whole index (the PDB's name hashes).
    auto s = pdb_->lookup(name);
    if (!s) return std::nullopt;
    return symbol_hit{std::move(s->name), s->rva, s->size, s->k == pdb::symbol::kind::function};
  }
  std::optional<symbol_hit> nearest(uint64_t offset) const override { return at(offset, &pdb::symbol_index::nearest); }
  std::optional<symbol_hit> following(uint64_t offset) const override {
    return at(offset, &pdb::symbol_index::following);
  }
  std::optional<symbol_hit> function_at(uint64_t offset) const override {
    return at(offset, &pdb::symbol_index::function_at);
  }
  void match(std::string_view pattern, const std::function<bool(const symbol_hit&)>& visit) const override {
    const pdb::symbol_index* index = symbols();
    if (index == nullptr) return;
    index->match(pattern, [&](const pdb::symbol& s) { return visit(hit(s)); });
  }
  const types::type_table* types() const override { return &pdb_->types(); }

 private:
  const pdb::symbol_index* symbols() const {
    auto index = pdb_->symbols();
    return index.ok() ? *index : nullptr;
  }
  // One of the index's by-address queries; RVAs are 32-bit.
  std::optional<symbol_hit> at(uint64_t offset, const pdb::symbol* (pdb::symbol_index::*query)(uint32_t) const) const {
    const pdb::symbol_index* index = symbols();
    if (index == nullptr || offset > UINT32_MAX) return std::nullopt;
    const pdb::symbol* s = (index->*query)(static_cast<uint32_t>(offset));
    if (s == nullptr) return std::nullopt;
    return hit(*s);
  }
  static symbol_hit hit(const pdb::symbol& s) {
    return {std::string(s.name), s.rva, s.size, s.k == pdb::symbol::kind::function};
  }

  std::shared_ptr<const pdb::pdb_file> pdb_;
};

}  // namespace

std::shared_ptr<const symbol_source> make_pdb_source(std::shared_ptr<const pdb::pdb_file> pdb) {
  return std::make_shared<pdb_source>(std::move(pdb));
}

absl::StatusOr<std::shared_ptr<const pdb::pdb_file>> find_pdb(const pe::codeview& cv, const pdb_search& search) {
  const std::string name = cv.pdb_name();
  if (!cv.rsds) {
    return absl::NotFoundError(name + " is named by an old NB10 record, which symbol servers do not index");
  }
  if (search.path.empty()) {
    return absl::NotFoundError(name +
                               " was not looked for: the symbol path is empty (.symfix for Microsoft's server, "
                               ".sympath+ for a folder)");
  }
  std::shared_ptr<const pdb::pdb_file> opened;
  symbols::file_request request;
  request.name = name;
  request.key = cv.key();
  request.progress = search.progress;
  request.cancelled = search.cancelled;
  request.timeout = search.timeout;
  request.verify = [&](const std::string& path) -> absl::Status {
    auto pdb = pdb::pdb_file::open(path);
    if (!pdb.ok()) return pdb.status();
    if (absl::Status s = (*pdb)->check_identity(cv.guid, cv.age); !s.ok()) return s;
    opened = std::move(*pdb);
    return absl::OkStatus();
  };
  auto result = symbols::locate(search.path, request);
  if (result.found) {
    // The file may have moved into the cache after it was checked: open it where it is now.
    if (!opened || opened->path() != result.found->path) {
      auto pdb = pdb::pdb_file::open(result.found->path);
      if (!pdb.ok()) return pdb.status();
      opened = std::move(*pdb);
    }
    return opened;
  }
  std::string why = name + " (" + cv.key() + ") was not found on the symbol path";
  if (!result.notes.empty()) why += ": " + absl::StrJoin(result.notes, "; ");
  if (result.network_failed) why += " (without a network, put the PDB in a folder and .sympath+ it)";
  return absl::NotFoundError(why);
}

}  // namespace toolhost::debugger
