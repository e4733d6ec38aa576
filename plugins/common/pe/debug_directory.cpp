// The debug directory and its CodeView record: the PDB's name, GUID and age.
#include <absl/strings/str_format.h>

#include "bytes.hpp"
#include "toolhost/pe/image.hpp"

namespace toolhost::pe {

using detail::u16;
using detail::u32;

namespace {
constexpr uint32_t kDebugTypeCodeView = 2;
constexpr size_t kMaxDebugEntries = 64;
constexpr size_t kMaxCodeViewSize = 0x1000;
}  // namespace

std::string codeview::pdb_name() const {
  const size_t slash = pdb_path.find_last_of("\\/");
  return slash == std::string::npos ? pdb_path : pdb_path.substr(slash + 1);
}

std::string codeview::guid_text() const {
  const std::string_view g(reinterpret_cast<const char*>(guid.data()), guid.size());
  return absl::StrFormat("{%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X}", u32(g, 0), u16(g, 4), u16(g, 6), guid[8],
                         guid[9], guid[10], guid[11], guid[12], guid[13], guid[14], guid[15]);
}

std::string codeview::key() const {
  if (!rsds) return absl::StrFormat("%08X%X", signature, age);
  const std::string_view g(reinterpret_cast<const char*>(guid.data()), guid.size());
  std::string out = absl::StrFormat("%08X%04X%04X", u32(g, 0), u16(g, 4), u16(g, 6));
  for (size_t i = 8; i < 16; ++i) out += absl::StrFormat("%02X", guid[i]);
  return out + absl::StrFormat("%X", age);
}

std::string image_key(uint32_t timestamp, uint32_t size_of_image) {
  return absl::StrFormat("%08X%X", timestamp, size_of_image);
}

absl::StatusOr<std::vector<debug_entry>> image::debug_entries() const {
  std::vector<debug_entry> out;
  const data_directory dir = directory_entry(kDebugDirectory);
  if (dir.rva == 0 || dir.size == 0) return out;
  const size_t count = dir.size / 28;
  if (count > kMaxDebugEntries) return error(absl::StrFormat("the debug directory declares %u entries", count));
  auto raw = read(dir.rva, count * 28);
  if (!raw.ok()) return raw.status();
  for (size_t i = 0; i < count; ++i) {
    const size_t at = i * 28;
    debug_entry e;
    e.timestamp = u32(*raw, at + 4);
    e.major = u16(*raw, at + 8);
    e.minor = u16(*raw, at + 10);
    e.type = u32(*raw, at + 12);
    e.size = u32(*raw, at + 16);
    e.rva = u32(*raw, at + 20);
    e.file_offset = u32(*raw, at + 24);
    out.push_back(e);
  }
  return out;
}

absl::StatusOr<std::optional<codeview>> image::codeview() const {
  auto entries = debug_entries();
  if (!entries.ok()) return entries.status();
  for (const debug_entry& e : *entries) {
    if (e.type != kDebugTypeCodeView) continue;
    if (e.size < 24 || e.size > kMaxCodeViewSize) {
      return error(absl::StrFormat("the CodeView record is 0x%x bytes", e.size));
    }
    absl::StatusOr<std::string> raw;
    if (e.rva != 0) {
      raw = read(e.rva, e.size);
    } else if (image_layout() == layout::file && file_bytes_ &&
               uint64_t{e.file_offset} + e.size <= file_bytes_->size()) {
      raw = file_bytes_->substr(e.file_offset, e.size);
    } else {
      return error("the CodeView record has no address");
    }
    if (!raw.ok()) return raw.status();
    pe::codeview cv;
    size_t path_at = 0;
    if (raw->compare(0, 4, "RSDS") == 0) {
      std::memcpy(cv.guid.data(), raw->data() + 4, 16);
      cv.age = u32(*raw, 20);
      path_at = 24;
    } else if (raw->compare(0, 4, "NB10") == 0) {
      if (raw->size() < 16) return error("the NB10 CodeView record is truncated");
      cv.rsds = false;
      cv.signature = u32(*raw, 8);
      cv.age = u32(*raw, 12);
      path_at = 16;
    } else {
      return error(absl::StrFormat("the CodeView record starts with 0x%08x, neither RSDS nor NB10", u32(*raw, 0)));
    }
    const size_t nul = raw->find('\0', path_at);
    cv.pdb_path = raw->substr(path_at, nul == std::string::npos ? std::string::npos : nul - path_at);
    return std::optional<pe::codeview>(std::move(cv));
  }
  return std::optional<pe::codeview>();
}

}  // namespace toolhost::pe
