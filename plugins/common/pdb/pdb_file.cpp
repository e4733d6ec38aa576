#include <toolhost/pdb/pdb_file.hpp>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>

#include <absl/strings/str_format.h>
#include <llvm/DebugInfo/CodeView/SymbolDeserializer.h>
#include <llvm/DebugInfo/CodeView/SymbolRecord.h>
#include <llvm/DebugInfo/MSF/MappedBlockStream.h>
#include <llvm/DebugInfo/PDB/Native/DbiModuleDescriptor.h>
#include <llvm/DebugInfo/PDB/Native/DbiModuleList.h>
#include <llvm/DebugInfo/PDB/Native/DbiStream.h>
#include <llvm/DebugInfo/PDB/Native/GlobalsStream.h>
#include <llvm/DebugInfo/PDB/Native/InfoStream.h>
#include <llvm/DebugInfo/PDB/Native/ModuleDebugStream.h>
#include <llvm/DebugInfo/PDB/Native/PDBFile.h>
#include <llvm/DebugInfo/PDB/Native/PublicsStream.h>
#include <llvm/DebugInfo/PDB/Native/RawConstants.h>
#include <llvm/DebugInfo/PDB/Native/SymbolStream.h>
#include <llvm/DebugInfo/PDB/Native/TpiStream.h>
#include <llvm/Object/COFF.h>
#include <llvm/Support/BinaryByteStream.h>
#include <llvm/Support/MemoryBuffer.h>

#include <llvm/DebugInfo/PDB/Native/Hash.h>

#include "llvm_error.hpp"
#include "pdb_types.hpp"

namespace toolhost::pdb {

namespace cv = llvm::codeview;
namespace lp = llvm::pdb;
using detail::invalid;
using detail::take_message;

namespace {

constexpr char kMsfMagic[] =
    "Microsoft C/C++ MSF 7.00\r\n\x1a"
    "DS\0\0\0";
constexpr uint32_t kMaxModules = 1u << 20;

// x86 publics carry C decorations ("_NtClose@4", "@f@8"); WinDbg shows the plain name.
std::string undecorate_x86(std::string name) {
  if (name.empty() || name[0] == '?') return name;  // C++ names are left as they are
  if (name[0] == '_' || name[0] == '@') name.erase(0, 1);
  if (const size_t at = name.rfind('@'); at != std::string::npos && at > 0 &&
                                         name.find_first_not_of("0123456789", at + 1) == std::string::npos &&
                                         at + 1 < name.size()) {
    name.resize(at);
  }
  return name;
}

// The types of a PDB without a type stream.
class empty_table final : public types::type_table {
 public:
  explicit empty_table(uint32_t pointer_size) : pointer_size_(pointer_size) {}
  const types::type& get(types::type_id) const override { return none_; }
  std::optional<types::type_id> find(std::string_view) const override { return std::nullopt; }
  void for_each_named(const std::function<bool(std::string_view, types::type_id)>&) const override {}
  uint32_t pointer_size() const override { return pointer_size_; }

 private:
  uint32_t pointer_size_;
  types::type none_;
};

}  // namespace

std::string identity::guid_text() const {
  uint32_t d1;
  uint16_t d2, d3;
  std::memcpy(&d1, guid.data(), 4);
  std::memcpy(&d2, guid.data() + 4, 2);
  std::memcpy(&d3, guid.data() + 6, 2);
  return absl::StrFormat("{%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X}", d1, d2, d3, guid[8], guid[9], guid[10],
                         guid[11], guid[12], guid[13], guid[14], guid[15]);
}

struct pdb_file::impl {
  std::string path;
  llvm::BumpPtrAllocator allocator;
  std::unique_ptr<lp::PDBFile> file;
  pdb::identity id;
  uint16_t machine = 0;
  bool private_symbols = false;

  mutable std::mutex mutex;
  mutable std::once_flag symbols_once;
  mutable std::atomic<bool> index_built{false};
  mutable std::atomic<uint32_t> hash_lookups{0};
  mutable absl::StatusOr<std::unique_ptr<symbol_index>> index = absl::UnknownError("not built");
  mutable std::once_flag types_once;
  mutable std::unique_ptr<types::type_table> type_table;

  absl::StatusOr<std::unique_ptr<symbol_index>> build_index() const;
  // The records the GSI hash table `table` files under `name`'s bucket.
  std::vector<cv::CVSymbol> in_hash_bucket(const lp::GSIHashTable& table, std::string_view name) const;
  mutable std::string lookup_name;  // the last lookup's name (a symbol's name points into it)
  // S_UDT typedef names -> type index, from the symbol record stream.
  std::map<std::string, uint32_t> typedefs() const;
};

std::vector<cv::CVSymbol> pdb_file::impl::in_hash_bucket(const lp::GSIHashTable& table, std::string_view name) const {
  std::vector<cv::CVSymbol> out;
  auto records = file->getPDBSymbolStream();
  if (!records) {
    take_message(records.takeError());
    return out;
  }
  const auto buckets = detail::copy_array(table.HashBuckets);
  const auto hash_records = detail::copy_array(table.HashRecords);
  if (!buckets || !hash_records || buckets->empty()) return out;
  const uint32_t expanded = lp::hashStringV1(llvm::StringRef(name.data(), name.size())) % lp::IPHR_HASH;
  const int32_t compressed = table.BucketMap[expanded];
  if (compressed < 0 || static_cast<size_t>(compressed) >= buckets->size()) return out;
  // Buckets hold byte offsets into the hash records as 12-byte in-memory records.
  const uint32_t first = (*buckets)[compressed] / 12;
  const uint32_t end = static_cast<size_t>(compressed) + 1 < buckets->size()
                           ? (*buckets)[compressed + 1] / 12
                           : static_cast<uint32_t>(hash_records->size());
  const cv::CVSymbolArray& array = records->getSymbolArray();
  for (uint32_t i = first; i < end && i < hash_records->size(); ++i) {
    const uint32_t offset = (*hash_records)[i].Off - 1;
    auto it = array.at(offset);
    if (it != array.end()) out.push_back(*it);
  }
  return out;
}

std::map<std::string, uint32_t> pdb_file::impl::typedefs() const {
  std::map<std::string, uint32_t> out;
  if (!file->hasPDBSymbolStream()) return out;
  auto records = file->getPDBSymbolStream();
  if (!records) {
    take_message(records.takeError());
    return out;
  }
  bool had_error = false;
  for (const cv::CVSymbol& sym : records->getSymbols(&had_error)) {
    if (sym.kind() != cv::S_UDT) continue;
    auto udt = cv::SymbolDeserializer::deserializeAs<cv::UDTSym>(sym);
    if (!udt) {
      take_message(udt.takeError());
      continue;
    }
    out.emplace(udt->Name.str(), udt->Type.getIndex());
  }
  return out;
}

pdb_file::pdb_file() : impl_(std::make_unique<impl>()) {}
pdb_file::~pdb_file() = default;

const std::string& pdb_file::path() const { return impl_->path; }
const pdb::identity& pdb_file::id() const { return impl_->id; }
uint16_t pdb_file::machine() const { return impl_->machine; }
bool pdb_file::has_private_symbols() const { return impl_->private_symbols; }

absl::StatusOr<std::unique_ptr<pdb_file>> pdb_file::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  {
    // Our own look at the superblock first, so that a file that is not a PDB gets a plain answer.
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError("cannot open " + name + ": no such readable file");
    char magic[sizeof kMsfMagic - 1] = {};
    in.read(magic, sizeof magic);
    if (in.gcount() != sizeof magic || std::memcmp(magic, kMsfMagic, sizeof magic) != 0) {
      return absl::InvalidArgumentError(name + " is not a PDB: it does not start with the MSF 7.00 signature");
    }
  }
  auto buffer = llvm::MemoryBuffer::getFile(name, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) return absl::NotFoundError("cannot read " + name + ": " + buffer.getError().message());
  std::unique_ptr<pdb_file> out(new pdb_file());
  impl& p = *out->impl_;
  p.path = name;
  auto stream = std::make_unique<llvm::MemoryBufferByteStream>(std::move(*buffer), llvm::support::little);
  p.file = std::make_unique<lp::PDBFile>(name, std::move(stream), p.allocator);
  if (auto e = p.file->parseFileHeaders()) return invalid(name, "bad MSF header", std::move(e));
  if (auto e = p.file->parseStreamData()) return invalid(name, "bad stream directory", std::move(e));
  auto info = p.file->getPDBInfoStream();
  if (!info) return invalid(name, "bad PDB info stream", info.takeError());
  const cv::GUID guid = info->getGuid();
  std::memcpy(p.id.guid.data(), guid.Guid, 16);
  p.id.info_age = info->getAge();
  p.id.age = p.id.info_age;
  if (p.file->hasPDBDbiStream()) {
    auto dbi = p.file->getPDBDbiStream();
    if (!dbi) return invalid(name, "bad DBI stream", dbi.takeError());
    p.id.age = dbi->getAge();
    p.machine = static_cast<uint16_t>(dbi->getMachineType());
    const lp::DbiModuleList& modules = dbi->modules();
    for (uint32_t i = 0; i < modules.getModuleCount() && i < kMaxModules; ++i) {
      const lp::DbiModuleDescriptor d = modules.getModuleDescriptor(i);
      if (d.getModuleStreamIndex() != lp::kInvalidStreamIndex && d.getSymbolDebugInfoByteSize() > 4) {
        p.private_symbols = true;
        break;
      }
    }
  }
  return out;
}

absl::Status pdb_file::check_identity(const std::array<uint8_t, 16>& guid, uint32_t age) const {
  const pdb::identity& id = impl_->id;
  if (id.guid == guid && (id.age == age || id.info_age == age)) return absl::OkStatus();
  pdb::identity want;
  want.guid = guid;
  want.age = age;
  return absl::FailedPreconditionError(
      absl::StrFormat("%s does not match the image: the image wants %s age %u, the PDB is %s age %u", impl_->path,
                      want.guid_text(), age, id.guid_text(), id.age));
}

absl::StatusOr<std::unique_ptr<symbol_index>> pdb_file::impl::build_index() const {
  if (!file->hasPDBDbiStream()) return absl::InvalidArgumentError(path + " has no DBI stream, so no symbols");
  auto dbi = file->getPDBDbiStream();
  if (!dbi) return invalid(path, "bad DBI stream", dbi.takeError());
  const auto headers = detail::copy_array(dbi->getSectionHeaders());
  if (!headers) return absl::InvalidArgumentError(path + ": the section header stream is not in the file");
  const bool x86 = machine == 0x14c;
  auto rva_of = [&](uint16_t segment, uint32_t offset) -> std::optional<uint32_t> {
    if (segment == 0 || segment > headers->size()) return std::nullopt;
    return (*headers)[segment - 1].VirtualAddress + offset;
  };
  std::vector<symbol> all;
  // Names are copied into large blocks, one allocation per 1 MiB rather than one per name.
  std::vector<std::unique_ptr<char[]>> blocks;
  size_t block_left = 0;
  char* block_at = nullptr;
  auto add = [&](llvm::StringRef name, uint32_t rva, uint32_t size, symbol::kind k) {
    if (name.empty()) return;
    if (name.size() > block_left) {
      const size_t bytes = std::max<size_t>(1 << 20, name.size());
      blocks.push_back(std::make_unique<char[]>(bytes));
      block_at = blocks.back().get();
      block_left = bytes;
    }
    std::memcpy(block_at, name.data(), name.size());
    all.push_back({std::string_view(block_at, name.size()), rva, size, k});
    block_at += name.size();
    block_left -= name.size();
  };

  // S_GDATA32 / S_LDATA32: in module streams (statics) and in the symbol record stream (globals).
  auto add_data = [&](const cv::CVSymbol& sym) {
    auto data = cv::SymbolDeserializer::deserializeAs<cv::DataSym>(sym);
    if (!data) {
      take_message(data.takeError());
      return;
    }
    if (auto rva = rva_of(data->Segment, data->DataOffset)) add(data->Name, *rva, 0, symbol::kind::data);
  };

  // Procedures and data in the module streams (private symbols, statics included).
  const lp::DbiModuleList& modules = dbi->modules();
  for (uint32_t i = 0; i < modules.getModuleCount() && i < kMaxModules; ++i) {
    const lp::DbiModuleDescriptor d = modules.getModuleDescriptor(i);
    const uint16_t si = d.getModuleStreamIndex();
    if (si == lp::kInvalidStreamIndex || si >= file->getNumStreams()) continue;
    auto ms = file->createIndexedStream(si);
    if (!ms) continue;
    lp::ModuleDebugStreamRef mod(d, std::move(ms));
    if (auto e = mod.reload()) {
      take_message(std::move(e));
      continue;
    }
    bool had_error = false;
    for (const cv::CVSymbol& sym : mod.symbols(&had_error)) {
      switch (sym.kind()) {
        case cv::S_GPROC32:
        case cv::S_LPROC32:
        case cv::S_GPROC32_ID:
        case cv::S_LPROC32_ID: {
          auto proc = cv::SymbolDeserializer::deserializeAs<cv::ProcSym>(sym);
          if (!proc) {
            take_message(proc.takeError());
            break;
          }
          if (auto rva = rva_of(proc->Segment, proc->CodeOffset)) {
            add(proc->Name, *rva, proc->CodeSize, symbol::kind::function);
          }
          break;
        }
        case cv::S_LDATA32:
        case cv::S_GDATA32: add_data(sym); break;
        default: break;
      }
    }
  }

  // The symbol record stream holds every public and global record; the publics and globals
  // streams only index it. Reading it in order (each record's length checked by the iterator)
  // rather than through those indexes keeps a corrupt index from pointing into the middle of a
  // record.
  if (file->hasPDBSymbolStream()) {
    auto records = file->getPDBSymbolStream();
    if (!records) return invalid(path, "bad symbol record stream", records.takeError());
    bool had_error = false;
    for (const cv::CVSymbol& sym : records->getSymbols(&had_error)) {
      switch (sym.kind()) {
        case cv::S_PUB32: {
          // Publics: every external name with its address (all a stripped public PDB has).
          auto pub = cv::SymbolDeserializer::deserializeAs<cv::PublicSym32>(sym);
          if (!pub) {
            take_message(pub.takeError());
            break;
          }
          auto rva = rva_of(pub->Segment, pub->Offset);
          if (!rva) break;
          const bool function =
              (static_cast<uint32_t>(pub->Flags) & static_cast<uint32_t>(cv::PublicSymFlags::Function)) != 0;
          const std::string plain = x86 ? undecorate_x86(pub->Name.str()) : std::string();
          add(x86 ? llvm::StringRef(plain) : pub->Name, *rva, 0,
              function ? symbol::kind::function : symbol::kind::data);
          break;
        }
        case cv::S_LDATA32:
        case cv::S_GDATA32: add_data(sym); break;
        default: break;
      }
    }
  }
  return std::make_unique<symbol_index>(std::move(all), std::move(blocks));
}

absl::StatusOr<const symbol_index*> pdb_file::symbols() const {
  std::call_once(impl_->symbols_once, [this] {
    impl_->index = impl_->build_index();
    impl_->index_built = true;
  });
  if (!impl_->index.ok()) return impl_->index.status();
  return impl_->index->get();
}

std::optional<owned_symbol> pdb_file::lookup(std::string_view name) const {
  // With the index built (or on x86, whose publics are decorated and only plain in the index),
  // the index answers.
  // Many lookups by name are a session that will keep asking: the index answers them faster.
  if (impl_->index_built.load() || impl_->machine == 0x14c || ++impl_->hash_lookups > 16) {
    auto index = symbols();
    if (!index.ok()) return std::nullopt;
    const symbol* s = (*index)->find(name);
    if (s == nullptr) return std::nullopt;
    return owned_symbol{std::string(s->name), s->rva, s->size, s->k};
  }
  std::lock_guard lock(impl_->mutex);
  impl& p = *impl_;
  if (!p.file->hasPDBDbiStream() || !p.file->hasPDBSymbolStream()) return std::nullopt;
  auto dbi = p.file->getPDBDbiStream();
  if (!dbi) {
    take_message(dbi.takeError());
    return std::nullopt;
  }
  const auto headers = detail::copy_array(dbi->getSectionHeaders());
  if (!headers) return std::nullopt;
  auto rva_of = [&](uint16_t segment, uint32_t offset) -> std::optional<uint32_t> {
    if (segment == 0 || segment > headers->size()) return std::nullopt;
    return (*headers)[segment - 1].VirtualAddress + offset;
  };
  std::optional<symbol> exact, folded;
  auto consider = [&](llvm::StringRef found, uint32_t rva, uint32_t size, symbol::kind k) {
    const bool same = found == llvm::StringRef(name.data(), name.size());
    if (!same && !found.equals_insensitive(llvm::StringRef(name.data(), name.size()))) return;
    std::optional<symbol>& slot = same ? exact : folded;
    if (slot && slot->k == symbol::kind::function && slot->size >= size) return;
    p.lookup_name = found.str();
    slot = symbol{std::string_view(), rva, size, k};
  };
  // A procedure's reference in the globals names its module stream and offset there.
  auto procedure = [&](const cv::ProcRefSym& ref) {
    const lp::DbiModuleList& modules = dbi->modules();
    if (ref.Module == 0 || ref.modi() >= modules.getModuleCount()) return;
    const lp::DbiModuleDescriptor d = modules.getModuleDescriptor(ref.modi());
    const uint16_t si = d.getModuleStreamIndex();
    if (si == lp::kInvalidStreamIndex || si >= p.file->getNumStreams()) return;
    auto ms = p.file->createIndexedStream(si);
    if (!ms) return;
    lp::ModuleDebugStreamRef mod(d, std::move(ms));
    if (auto e = mod.reload()) {
      take_message(std::move(e));
      return;
    }
    const cv::CVSymbolArray& array = mod.getSymbolArray();
    auto it = array.at(ref.SymOffset);
    if (it == array.end()) return;
    auto proc = cv::SymbolDeserializer::deserializeAs<cv::ProcSym>(*it);
    if (!proc) {
      take_message(proc.takeError());
      return;
    }
    if (auto rva = rva_of(proc->Segment, proc->CodeOffset))
      consider(proc->Name, *rva, proc->CodeSize, symbol::kind::function);
  };
  if (p.file->hasPDBGlobalsStream()) {
    if (auto globals = p.file->getPDBGlobalsStream(); globals) {
      for (const cv::CVSymbol& sym : p.in_hash_bucket(globals->getGlobalsTable(), name)) {
        if (sym.kind() == cv::S_GDATA32 || sym.kind() == cv::S_LDATA32) {
          auto data = cv::SymbolDeserializer::deserializeAs<cv::DataSym>(sym);
          if (!data) {
            take_message(data.takeError());
            continue;
          }
          if (auto rva = rva_of(data->Segment, data->DataOffset)) consider(data->Name, *rva, 0, symbol::kind::data);
        } else if (sym.kind() == cv::S_PROCREF || sym.kind() == cv::S_LPROCREF) {
          auto ref = cv::SymbolDeserializer::deserializeAs<cv::ProcRefSym>(sym);
          if (!ref) {
            take_message(ref.takeError());
            continue;
          }
          if (ref->Name.equals_insensitive(llvm::StringRef(name.data(), name.size()))) procedure(*ref);
        }
      }
    } else {
      take_message(globals.takeError());
    }
  }
  if (!exact && p.file->hasPDBPublicsStream() &&
      p.machine != 0x14c) {  // x86 publics are decorated: the index undecorates them
    if (auto publics = p.file->getPDBPublicsStream(); publics) {
      for (const cv::CVSymbol& sym : p.in_hash_bucket(publics->getPublicsTable(), name)) {
        if (sym.kind() != cv::S_PUB32) continue;
        auto pub = cv::SymbolDeserializer::deserializeAs<cv::PublicSym32>(sym);
        if (!pub) {
          take_message(pub.takeError());
          continue;
        }
        const bool function =
            (static_cast<uint32_t>(pub->Flags) & static_cast<uint32_t>(cv::PublicSymFlags::Function)) != 0;
        if (auto rva = rva_of(pub->Segment, pub->Offset)) {
          consider(pub->Name, *rva, 0, function ? symbol::kind::function : symbol::kind::data);
        }
      }
    } else {
      take_message(publics.takeError());
    }
  }
  std::optional<symbol> found = exact ? exact : folded;
  if (!found) return std::nullopt;
  return owned_symbol{p.lookup_name, found->rva, found->size, found->k};
}

const types::type_table& pdb_file::types() const {
  std::call_once(impl_->types_once, [this] {
    impl& p = *impl_;
    const uint32_t pointer_size = p.machine == 0x14c ? 4 : 8;
    auto tpi = p.file->hasPDBTpiStream() ? p.file->getPDBTpiStream()
                                         : llvm::Expected<lp::TpiStream&>(llvm::make_error<llvm::StringError>(
                                               "no TPI stream", llvm::inconvertibleErrorCode()));
    if (!tpi) {
      take_message(tpi.takeError());
      p.type_table = std::make_unique<empty_table>(pointer_size);
      return;
    }
    p.type_table = detail::make_pdb_types(*tpi, pointer_size, [&p] { return p.typedefs(); });
  });
  return *impl_->type_table;
}

}  // namespace toolhost::pdb
