#include "pdb_types.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include <llvm/DebugInfo/CodeView/CVTypeVisitor.h>
#include <llvm/DebugInfo/CodeView/LazyRandomTypeCollection.h>
#include <llvm/DebugInfo/CodeView/TypeDeserializer.h>
#include <llvm/DebugInfo/CodeView/TypeRecord.h>
#include <llvm/DebugInfo/CodeView/TypeVisitorCallbacks.h>
#include <llvm/DebugInfo/PDB/Native/Hash.h>
#include <llvm/DebugInfo/PDB/Native/TpiHashing.h>

#include "llvm_error.hpp"

namespace toolhost::pdb::detail {

namespace cv = llvm::codeview;
using types::encoding;
using types::kind;
using types::type;
using types::type_id;

namespace {

constexpr int kMaxContinuations = 4096;

bool is_udt(cv::TypeLeafKind k) {
  return k == cv::LF_STRUCTURE || k == cv::LF_CLASS || k == cv::LF_INTERFACE || k == cv::LF_UNION || k == cv::LF_ENUM;
}

// clang names anonymous nested types "Parent::<unnamed-tag>", Microsoft "<unnamed-tag>" or
// "<anonymous-tag>": none of them is a name a person types.
bool is_anonymous(llvm::StringRef name) {
  return name.empty() || name.contains("<unnamed-") || name.contains("<anonymous-");
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The neutral type of a CodeView simple type kind (the low byte of a type index below 0x1000).
type simple_type(uint32_t k) {
  type t;
  t.k = kind::base;
  auto set = [&](const char* name, uint64_t size, encoding e) {
    t.name = name;
    t.size = size;
    t.enc = e;
  };
  switch (k) {
    case 0x03: set("void", 0, encoding::none); break;
    case 0x08: set("HRESULT", 4, encoding::signed_integer); break;
    case 0x10: set("signed char", 1, encoding::signed_char); break;
    case 0x20: set("unsigned char", 1, encoding::unsigned_char); break;
    case 0x70: set("char", 1, encoding::signed_char); break;
    case 0x71: set("wchar_t", 2, encoding::wide_char); break;
    case 0x7a: set("char16_t", 2, encoding::wide_char); break;
    case 0x7b: set("char32_t", 4, encoding::unsigned_integer); break;
    case 0x7c: set("char8_t", 1, encoding::unsigned_char); break;
    case 0x68: set("__int8", 1, encoding::signed_integer); break;
    case 0x69: set("unsigned __int8", 1, encoding::unsigned_integer); break;
    case 0x11: set("short", 2, encoding::signed_integer); break;
    case 0x21: set("unsigned short", 2, encoding::unsigned_integer); break;
    case 0x72: set("__int16", 2, encoding::signed_integer); break;
    case 0x73: set("unsigned __int16", 2, encoding::unsigned_integer); break;
    case 0x12: set("long", 4, encoding::signed_integer); break;
    case 0x22: set("unsigned long", 4, encoding::unsigned_integer); break;
    case 0x74: set("int", 4, encoding::signed_integer); break;
    case 0x75: set("unsigned int", 4, encoding::unsigned_integer); break;
    case 0x13: set("__int64", 8, encoding::signed_integer); break;
    case 0x23: set("unsigned __int64", 8, encoding::unsigned_integer); break;
    case 0x76: set("__int64", 8, encoding::signed_integer); break;
    case 0x77: set("unsigned __int64", 8, encoding::unsigned_integer); break;
    case 0x14:
    case 0x78: set("__int128", 16, encoding::signed_integer); break;
    case 0x24:
    case 0x79: set("unsigned __int128", 16, encoding::unsigned_integer); break;
    case 0x46: set("_Float16", 2, encoding::floating); break;
    case 0x40: set("float", 4, encoding::floating); break;
    case 0x41: set("double", 8, encoding::floating); break;
    case 0x42: set("long double", 10, encoding::floating); break;
    case 0x30: set("bool", 1, encoding::boolean); break;
    case 0x31: set("bool16", 2, encoding::boolean); break;
    case 0x32: set("bool32", 4, encoding::boolean); break;
    case 0x33: set("bool64", 8, encoding::boolean); break;
    default: set("<unknown simple type>", 0, encoding::none); break;
  }
  return t;
}

// Collects a field list's members and enumerators, following LF_INDEX continuations.
class member_collector final : public cv::TypeVisitorCallbacks {
 public:
  std::vector<std::pair<cv::DataMemberRecord, bool>> data;  // (member, is base class)
  std::vector<cv::BaseClassRecord> bases;
  std::vector<std::pair<std::string, int64_t>> enumerators;
  std::vector<cv::TypeIndex> continuations;

  llvm::Error visitKnownMember(cv::CVMemberRecord&, cv::DataMemberRecord& r) override {
    data.emplace_back(r, false);
    return llvm::Error::success();
  }
  llvm::Error visitKnownMember(cv::CVMemberRecord&, cv::BaseClassRecord& r) override {
    bases.push_back(r);
    return llvm::Error::success();
  }
  llvm::Error visitKnownMember(cv::CVMemberRecord&, cv::EnumeratorRecord& r) override {
    const llvm::APSInt v = r.getValue();
    const int64_t value =
        v.getBitWidth() <= 64 ? (v.isSigned() ? v.getExtValue() : static_cast<int64_t>(v.getZExtValue())) : 0;
    enumerators.emplace_back(r.getName().str(), value);
    return llvm::Error::success();
  }
  llvm::Error visitKnownMember(cv::CVMemberRecord&, cv::ListContinuationRecord& r) override {
    continuations.push_back(r.getContinuationIndex());
    return llvm::Error::success();
  }
};

class pdb_types final : public types::type_table {
 public:
  pdb_types(llvm::pdb::TpiStream& tpi, uint32_t pointer_size, std::function<std::map<std::string, uint32_t>()> aliases)
      : tpi_(tpi), pointer_size_(pointer_size), alias_source_(std::move(aliases)) {}

  const type& get(type_id id) const override {
    std::lock_guard lock(mutex_);
    if (pending_[id] != 0) materialize(id);
    return store_.at(id);
  }

  std::optional<type_id> find(std::string_view name) const override {
    std::lock_guard lock(mutex_);
    if (auto it = found_.find(std::string(name)); it != found_.end()) return it->second;
    if (auto ti = find_index(name)) {
      const type_id id = id_for(*ti);
      found_.emplace(std::string(name), id);
      return id;
    }
    // A typedef (S_UDT) of a structure: "EPROCESS" for "_EPROCESS".
    if (alias_source_) {
      aliases_ = alias_source_();
      alias_source_ = nullptr;
    }
    if (auto it = aliases_.find(std::string(name)); it != aliases_.end()) {
      const cv::TypeIndex target(it->second);
      if (!valid(target)) return std::nullopt;
      type t;
      t.k = kind::alias;
      t.name = it->first;
      t.target = id_for(target);
      return add(std::move(t));
    }
    return std::nullopt;
  }

  void for_each_named(const std::function<bool(std::string_view, type_id)>& visit) const override {
    std::vector<std::pair<std::string, uint32_t>> names;
    {
      std::lock_guard lock(mutex_);
      build_name_index();
      names.assign(names_.begin(), names_.end());
    }
    for (const auto& [name, raw] : names) {
      type_id id;
      {
        std::lock_guard lock(mutex_);
        id = id_for(cv::TypeIndex(raw));
      }
      if (!visit(name, id)) return;
    }
  }

  uint32_t pointer_size() const override { return pointer_size_; }

 private:
  bool valid(cv::TypeIndex ti) const {
    return ti.isSimple() || (ti.getIndex() >= tpi_.TypeIndexBegin() && ti.getIndex() < tpi_.TypeIndexEnd());
  }

  // A record by type index. LLVM's own random access trusts the hash stream's offsets and
  // reads past the end of the records when they are wrong, so records are found here: from the
  // nearest checked offset hint, forward through the type array, whose iterator checks every
  // record's length against the stream.
  std::optional<cv::CVType> record(cv::TypeIndex ti) const {
    if (ti.isSimple() || !valid(ti)) return std::nullopt;
    const uint32_t index = ti.getIndex() - tpi_.TypeIndexBegin();
    if (offsets_.empty()) prepare_offsets();
    const cv::CVTypeArray& array = tpi_.typeArray();
    if (offsets_[index] != kUnknown) {
      auto it = array.at(offsets_[index]);
      if (it == array.end()) return std::nullopt;
      return *it;
    }
    // The last hint at or before `ti`, else the start.
    uint32_t from = 0, from_offset = 0;
    auto h = std::upper_bound(hints_.begin(), hints_.end(), index,
                              [](uint32_t i, const std::pair<uint32_t, uint32_t>& p) { return i < p.first; });
    if (h != hints_.begin()) {
      --h;
      from = h->first;
      from_offset = h->second;
    }
    // Resume from the furthest offset already known between the hint and `ti`: the records
    // from the start that have all been walked, or, within a hint's stretch, a walk back to it.
    if (from == 0 && frontier_ > 0 && frontier_ <= index) {
      from = frontier_ - 1;
      from_offset = offsets_[from];
    }
    for (uint32_t i = index; i > from && index - i < 4096; --i) {
      if (offsets_[i - 1] != kUnknown) {
        from = i - 1;
        from_offset = offsets_[i - 1];
        break;
      }
    }
    // Walk the record prefixes (a 16-bit length each) in the raw bytes from there: one read
    // for the stretch up to the next hint rather than one iterator step per record.
    const llvm::BinaryStreamRef stream = array.getUnderlyingStream();
    const uint32_t length_of_stream = static_cast<uint32_t>(stream.getLength());
    uint32_t at = from_offset;
    for (uint32_t i = from; i <= index;) {
      const uint32_t chunk = std::min<uint32_t>(length_of_stream - std::min(at, length_of_stream), 64 * 1024);
      if (chunk < 4) return std::nullopt;
      llvm::ArrayRef<uint8_t> bytes;
      if (auto e = stream.readBytes(at, chunk, bytes)) {
        take_message(std::move(e));
        return std::nullopt;
      }
      uint32_t pos = 0;
      while (i <= index && pos + 4 <= bytes.size()) {
        const uint32_t length = bytes[pos] | (bytes[pos + 1] << 8);
        if (length < 2) return std::nullopt;                    // a record holds at least its kind
        if (pos + 2 + length > bytes.size() && pos > 0) break;  // continue in the next chunk
        offsets_[i] = at + pos;
        if (i == frontier_) ++frontier_;
        pos += 2 + length;
        ++i;
      }
      if (pos == 0) return std::nullopt;
      at += pos;
    }
    auto it = array.at(offsets_[index]);
    if (it == array.end()) return std::nullopt;
    return *it;
  }

  void prepare_offsets() const {
    const uint32_t count = tpi_.TypeIndexEnd() - tpi_.TypeIndexBegin();
    offsets_.assign(count, kUnknown);
    // The hash stream's offsets, if they are plausible: increasing, inside the records.
    const uint32_t length = tpi_.typeArray().getUnderlyingStream().getLength();
    uint32_t last_index = 0, last_offset = 0;
    bool first = true;
    const auto hints = copy_array(tpi_.getTypeIndexOffsets());
    if (!hints) return;
    for (const cv::TypeIndexOffset& o : *hints) {
      const uint32_t raw = o.Type.getIndex();
      if (raw < tpi_.TypeIndexBegin() || raw >= tpi_.TypeIndexEnd() || o.Offset >= length ||
          (!first && (raw - tpi_.TypeIndexBegin() <= last_index || o.Offset <= last_offset))) {
        hints_.clear();
        return;
      }
      last_index = raw - tpi_.TypeIndexBegin();
      last_offset = o.Offset;
      first = false;
      hints_.emplace_back(last_index, last_offset);
    }
  }

  type_id add(type t, uint32_t pending = 0) const {
    const type_id id = static_cast<type_id>(store_.size());
    store_.add(std::move(t));
    pending_.push_back(pending);
    return id;
  }

  // A type that stands in for a record that cannot be read.
  type_id broken(const std::string& why) const {
    type t;
    t.k = kind::structure;
    t.name = "<" + why + ">";
    t.incomplete = true;
    return add(std::move(t));
  }

  // The id for a type index: simple types and modifiers at once, forward references resolved
  // to their definitions, everything else made when first looked at (get).
  type_id id_for(cv::TypeIndex ti) const {
    if (auto it = by_index_.find(ti.getIndex()); it != by_index_.end()) {
      return it->second != kNoneYet ? it->second : broken("a modifier that modifies itself");
    }
    type_id id;
    if (ti.isSimple()) {
      type base = simple_type(static_cast<uint32_t>(ti.getSimpleKind()));
      if (ti.getSimpleMode() == cv::SimpleTypeMode::Direct) {
        id = add(std::move(base));
      } else {
        const type_id target = add(std::move(base));
        type p;
        p.k = kind::pointer;
        p.size = ti.getSimpleMode() == cv::SimpleTypeMode::NearPointer64 ? 8 : 4;
        p.target = target;
        id = add(std::move(p));
      }
    } else if (auto cvt = record(ti); !cvt) {
      id = broken(ti.getIndex() < tpi_.TypeIndexEnd() ? "unreadable type record" : "type index out of range");
    } else if (cvt->kind() == cv::LF_MODIFIER) {
      cv::ModifierRecord m(cv::TypeRecordKind::Modifier);
      if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, m)) {
        take_message(std::move(e));
        id = broken("bad modifier record");
      } else {
        by_index_[ti.getIndex()] = kNoneYet;  // a modifier cycle ends here
        id = id_for(m.getModifiedType());
      }
    } else if (is_udt(cvt->kind()) && !known_complete_.count(ti.getIndex()) && is_forward_ref(*cvt)) {
      const cv::TypeIndex full = full_declaration(ti, *cvt);
      id = full == ti ? add(type{}, ti.getIndex()) : id_for(full);
    } else {
      id = add(type{}, ti.getIndex());
    }
    by_index_[ti.getIndex()] = id;
    return id;
  }

  // What a structure, union or enum record says of itself, read once.
  struct udt_info {
    bool ok = false, forward = false;
    std::string_view name;
    uint64_t size = 0;
  };
  static udt_info info_of(cv::CVType& cvt) {
    udt_info i;
    if (cvt.kind() == cv::LF_ENUM) {
      cv::EnumRecord r(cv::TypeRecordKind::Enum);
      if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
        take_message(std::move(e));
        return i;
      }
      return {true, r.isForwardRef(), std::string_view(r.getName().data(), r.getName().size()), 1};
    }
    if (cvt.kind() == cv::LF_UNION) {
      cv::UnionRecord r(cv::TypeRecordKind::Union);
      if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
        take_message(std::move(e));
        return i;
      }
      return {true, r.isForwardRef(), std::string_view(r.getName().data(), r.getName().size()), r.getSize()};
    }
    cv::ClassRecord r(cv::TypeRecordKind::Struct);
    if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
      take_message(std::move(e));
      return i;
    }
    return {true, r.isForwardRef(), std::string_view(r.getName().data(), r.getName().size()), r.getSize()};
  }

  static bool is_forward_ref(cv::CVType& cvt) {
    if (cvt.kind() == cv::LF_ENUM) {
      cv::EnumRecord r(cv::TypeRecordKind::Enum);
      if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
        take_message(std::move(e));
        return false;
      }
      return r.isForwardRef();
    }
    if (cvt.kind() == cv::LF_UNION) {
      cv::UnionRecord r(cv::TypeRecordKind::Union);
      if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
        take_message(std::move(e));
        return false;
      }
      return r.isForwardRef();
    }
    cv::ClassRecord r(cv::TypeRecordKind::Struct);
    if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
      take_message(std::move(e));
      return false;
    }
    return r.isForwardRef();
  }

  static std::string udt_name(cv::CVType& cvt) {
    if (cvt.kind() == cv::LF_ENUM) {
      cv::EnumRecord r(cv::TypeRecordKind::Enum);
      if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
        take_message(std::move(e));
        return "";
      }
      return r.getName().str();
    }
    if (cvt.kind() == cv::LF_UNION) {
      cv::UnionRecord r(cv::TypeRecordKind::Union);
      if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
        take_message(std::move(e));
        return "";
      }
      return r.getName().str();
    }
    cv::ClassRecord r(cv::TypeRecordKind::Struct);
    if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
      take_message(std::move(e));
      return "";
    }
    return r.getName().str();
  }

  // The definition a forward reference stands for: the TPI hash first, else the name index.
  cv::TypeIndex full_declaration(cv::TypeIndex forward, cv::CVType& cvt) const {
    const std::string name = udt_name(cvt);
    if (is_anonymous(name)) return forward;
    if (hash_usable()) {
      // A declaration and its definition hash alike (by unique name when there is one).
      auto hash = llvm::pdb::hashTypeRecord(cvt);
      if (hash) {
        for (cv::TypeIndex ti : in_bucket(*hash % tpi_.getNumHashBuckets())) {
          auto candidate = record(ti);
          if (!candidate || candidate->kind() != cvt.kind()) continue;
          const udt_info info = info_of(*candidate);
          if (info.ok && !info.forward && info.name == name) return ti;
        }
      } else {
        take_message(hash.takeError());
      }
    }
    build_name_index();
    if (auto it = names_.find(name); it != names_.end()) return cv::TypeIndex(it->second);
    return forward;
  }

  // The TPI hash: each record's bucket, as the PDB stores it. Used only when it has one value
  // per record, each inside the bucket count (LLVM 14's own lookup trusts both).
  bool hash_usable() const {
    if (!hash_checked_) {
      hash_checked_ = true;
      const auto values = copy_array(tpi_.getHashValues());
      const uint32_t buckets = tpi_.getNumHashBuckets();
      bool sound = values && buckets > 0 && values->size() == tpi_.getNumTypeRecords();
      for (uint32_t index = 0; sound && index < values->size(); ++index) {
        const uint32_t v = (*values)[index];
        sound = v < buckets;
        by_bucket_.emplace_back(v, index + tpi_.TypeIndexBegin());
      }
      if (sound) {
        std::sort(by_bucket_.begin(), by_bucket_.end());
      } else {
        by_bucket_.clear();
      }
      hash_ok_ = sound;
    }
    return hash_ok_;
  }

  // The records in `bucket`.
  std::vector<cv::TypeIndex> in_bucket(uint32_t bucket) const {
    std::vector<cv::TypeIndex> out;
    auto range = std::equal_range(by_bucket_.begin(), by_bucket_.end(), std::make_pair(bucket, 0u),
                                  [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto it = range.first; it != range.second; ++it) out.emplace_back(it->second);
    return out;
  }

  uint64_t udt_size(cv::CVType& cvt) const {
    if (cvt.kind() == cv::LF_UNION) {
      cv::UnionRecord r(cv::TypeRecordKind::Union);
      if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
        take_message(std::move(e));
        return 0;
      }
      return r.getSize();
    }
    if (cvt.kind() == cv::LF_ENUM) return 1;  // any definition beats a forward reference
    cv::ClassRecord r(cv::TypeRecordKind::Struct);
    if (auto e = cv::TypeDeserializer::deserializeAs(cvt, r)) {
      take_message(std::move(e));
      return 0;
    }
    return r.getSize();
  }

  // A named definition's type index: the TPI hash's candidates, else the name index (which
  // also answers case-insensitively).
  std::optional<cv::TypeIndex> find_index(std::string_view name) const {
    std::optional<cv::TypeIndex> best, forward;
    uint64_t best_size = 0;
    if (hash_usable()) {
      // A declaration and its definition share the bucket of their name.
      const uint32_t bucket =
          llvm::pdb::hashStringV1(llvm::StringRef(name.data(), name.size())) % tpi_.getNumHashBuckets();
      for (cv::TypeIndex ti : in_bucket(bucket)) {
        auto cvt = record(ti);
        if (!cvt || !is_udt(cvt->kind())) continue;
        const udt_info info = info_of(*cvt);
        if (!info.ok || info.name != name) continue;
        if (info.forward) {
          if (!forward) forward = ti;
        } else if (!best || info.size > best_size) {
          best = ti;
          best_size = info.size;
        }
      }
      // Only a declaration here (the definition hashed by its unique name): follow it.
      if (!best && forward) {
        auto cvt = record(*forward);
        const cv::TypeIndex full = full_declaration(*forward, *cvt);
        if (full != *forward) best = full;
      }
    }
    if (best) {
      known_complete_.insert(best->getIndex());
      return best;
    }
    build_name_index();
    if (auto it = names_.find(std::string(name)); it != names_.end()) return cv::TypeIndex(it->second);
    if (auto it = lower_names_.find(lower(name)); it != lower_names_.end()) return cv::TypeIndex(it->second);
    return std::nullopt;
  }

  // Every named definition, the largest of each name: one pass over the type stream, made
  // only for a listing (dt mod!Prefix*), a case-insensitive name, or a PDB without a hash.
  void build_name_index() const {
    if (names_built_) return;
    names_built_ = true;
    std::map<std::string, std::pair<uint32_t, uint64_t>> best;
    if (offsets_.empty()) prepare_offsets();
    const cv::CVTypeArray& array = tpi_.typeArray();
    uint32_t index = tpi_.TypeIndexBegin();
    for (auto it = array.begin(); it != array.end() && index < tpi_.TypeIndexEnd(); ++it) {
      const uint32_t ti = index++;
      offsets_[ti - tpi_.TypeIndexBegin()] = it.offset();
      if (ti - tpi_.TypeIndexBegin() == frontier_) ++frontier_;
      cv::CVType cvt = *it;
      if (!is_udt(cvt.kind()) || is_forward_ref(cvt)) continue;
      const std::string name = udt_name(cvt);
      if (is_anonymous(name)) continue;
      const uint64_t size = udt_size(cvt);
      auto known = best.find(name);
      if (known == best.end() || size > known->second.second) best[name] = {ti, size};
    }
    for (const auto& [name, v] : best) {
      names_.emplace(name, v.first);
      lower_names_.emplace(lower(name), v.first);
    }
  }

  // Reads the record behind a pending id into the model.
  void materialize(type_id id) const {
    const cv::TypeIndex ti(pending_[id]);
    pending_[id] = 0;
    auto cvt = record(ti);
    type t;
    if (!cvt) {
      t.k = kind::structure;
      t.name = "<unreadable type record>";
      t.incomplete = true;
      store_.at(id) = std::move(t);
      return;
    }
    switch (cvt->kind()) {
      case cv::LF_POINTER: {
        cv::PointerRecord r(cv::TypeRecordKind::Pointer);
        if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, r)) return fail(id, std::move(e));
        t.k = kind::pointer;
        t.size = r.getSize() != 0 ? r.getSize() : pointer_size_;
        t.target = id_for(r.getReferentType());
        break;
      }
      case cv::LF_ARRAY: {
        cv::ArrayRecord r(cv::TypeRecordKind::Array);
        if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, r)) return fail(id, std::move(e));
        t.k = kind::array;
        t.size = r.getSize();
        t.target = id_for(r.getElementType());
        const uint64_t element = size_of(t.target);
        t.count = element != 0 ? t.size / element : 0;
        break;
      }
      case cv::LF_STRUCTURE:
      case cv::LF_CLASS:
      case cv::LF_INTERFACE: {
        cv::ClassRecord r(cv::TypeRecordKind::Struct);
        if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, r)) return fail(id, std::move(e));
        t.k = kind::structure;
        t.name = r.getName().str();
        t.size = r.getSize();
        t.incomplete = r.isForwardRef();
        if (!t.incomplete) collect_members(r.getFieldList(), t);
        break;
      }
      case cv::LF_UNION: {
        cv::UnionRecord r(cv::TypeRecordKind::Union);
        if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, r)) return fail(id, std::move(e));
        t.k = kind::union_;
        t.name = r.getName().str();
        t.size = r.getSize();
        t.incomplete = r.isForwardRef();
        if (!t.incomplete) collect_members(r.getFieldList(), t);
        break;
      }
      case cv::LF_ENUM: {
        cv::EnumRecord r(cv::TypeRecordKind::Enum);
        if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, r)) return fail(id, std::move(e));
        t.k = kind::enumeration;
        t.name = r.getName().str();
        t.target = id_for(r.getUnderlyingType());
        t.size = size_of(t.target);
        t.incomplete = r.isForwardRef();
        if (!t.incomplete) collect_members(r.getFieldList(), t);
        break;
      }
      case cv::LF_PROCEDURE: {
        cv::ProcedureRecord r(cv::TypeRecordKind::Procedure);
        if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, r)) return fail(id, std::move(e));
        t.k = kind::function;
        t.target = id_for(r.getReturnType());
        break;
      }
      case cv::LF_MFUNCTION: {
        cv::MemberFunctionRecord r(cv::TypeRecordKind::MemberFunction);
        if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, r)) return fail(id, std::move(e));
        t.k = kind::function;
        t.target = id_for(r.getReturnType());
        break;
      }
      default:
        t.k = kind::structure;
        t.name = "<type record 0x" + std::to_string(static_cast<unsigned>(cvt->kind())) + ">";
        t.incomplete = true;
        break;
    }
    store_.at(id) = std::move(t);
  }

  void fail(type_id id, llvm::Error e) const {
    type t;
    t.k = kind::structure;
    t.name = "<bad type record: " + take_message(std::move(e)) + ">";
    t.incomplete = true;
    store_.at(id) = std::move(t);
  }

  uint64_t size_of(type_id id) const {
    if (pending_[id] != 0) materialize(id);
    return store_.at(id).size;
  }

  void collect_members(cv::TypeIndex field_list, type& t) const {
    member_collector collector;
    std::vector<cv::TypeIndex> lists = {field_list};
    for (int n = 0; !lists.empty() && n < kMaxContinuations; ++n) {
      const cv::TypeIndex list = lists.back();
      lists.pop_back();
      auto cvt = record(list);
      if (!cvt || cvt->kind() != cv::LF_FIELDLIST) break;
      cv::FieldListRecord fl(cv::TypeRecordKind::FieldList);
      if (auto e = cv::TypeDeserializer::deserializeAs(*cvt, fl)) {
        take_message(std::move(e));
        break;
      }
      collector.continuations.clear();
      if (auto e = cv::visitMemberRecordStream(fl.Data, collector)) {
        take_message(std::move(e));
        break;
      }
      for (auto c : collector.continuations) lists.push_back(c);
    }
    for (const auto& b : collector.bases) {
      types::member m;
      m.base_class = true;
      m.offset = b.getBaseOffset();
      m.type = id_for(b.getBaseType());
      m.name = "__BaseClass";
      t.members.push_back(std::move(m));
    }
    for (const auto& [r, ignored] : collector.data) {
      types::member m;
      m.name = r.getName().str();
      m.offset = r.getFieldOffset();
      const cv::TypeIndex mt = r.getType();
      auto bitfield = record(mt);
      if (bitfield && bitfield->kind() == cv::LF_BITFIELD) {
        cv::BitFieldRecord bf(cv::TypeRecordKind::BitField);
        if (auto e = cv::TypeDeserializer::deserializeAs(*bitfield, bf)) {
          take_message(std::move(e));
          m.type = broken("bad bitfield record");
        } else {
          m.type = id_for(bf.getType());
          m.bit_position = bf.getBitOffset();
          m.bit_length = bf.getBitSize();
        }
      } else {
        m.type = id_for(mt);
      }
      t.members.push_back(std::move(m));
    }
    // Enumerators are stored as numeric leaves of their own width; read them as the
    // underlying type does (an int's 4294967295 is -1).
    const uint64_t width = t.k == kind::enumeration && t.target != types::kNoType ? store_.at(t.target).size : 8;
    const bool is_signed =
        t.k == kind::enumeration && t.target != types::kNoType &&
        (store_.at(t.target).enc == encoding::signed_integer || store_.at(t.target).enc == encoding::signed_char);
    for (const auto& [name, value] : collector.enumerators) {
      int64_t v = value;
      if (width > 0 && width < 8) {
        const uint64_t mask = (1ull << (width * 8)) - 1;
        uint64_t u = static_cast<uint64_t>(v) & mask;
        if (is_signed && (u >> (width * 8 - 1)) & 1) u |= ~mask;
        v = static_cast<int64_t>(u);
      }
      t.enumerators.push_back({name, v});
    }
  }

  static constexpr type_id kNoneYet = types::kNoType;

  llvm::pdb::TpiStream& tpi_;
  uint32_t pointer_size_;
  mutable std::function<std::map<std::string, uint32_t>()> alias_source_;
  mutable std::map<std::string, uint32_t> aliases_;
  mutable std::recursive_mutex mutex_;
  mutable types::type_store store_;
  mutable std::vector<uint32_t> pending_;  // per id: the type index still to read, or 0
  mutable std::unordered_map<uint32_t, type_id> by_index_;
  mutable std::unordered_map<std::string, type_id> found_;  // names already looked up
  mutable std::unordered_set<uint32_t> known_complete_;     // definitions found by name
  static constexpr uint32_t kUnknown = UINT32_MAX;
  mutable std::vector<uint32_t> offsets_;                         // per record, once known
  mutable uint32_t frontier_ = 0;                                 // offsets_[0, frontier_) are all known
  mutable std::vector<std::pair<uint32_t, uint32_t>> hints_;      // (record, offset) from the hash stream
  mutable std::vector<std::pair<uint32_t, uint32_t>> by_bucket_;  // (bucket, type index), sorted
  mutable bool names_built_ = false, hash_checked_ = false, hash_ok_ = false;
  mutable std::map<std::string, uint32_t> names_;
  mutable std::map<std::string, uint32_t> lower_names_;
};

}  // namespace

std::unique_ptr<types::type_table> make_pdb_types(llvm::pdb::TpiStream& tpi, uint32_t pointer_size,
                                                  std::function<std::map<std::string, uint32_t>()> aliases) {
  return std::make_unique<pdb_types>(tpi, pointer_size, std::move(aliases));
}

}  // namespace toolhost::pdb::detail
