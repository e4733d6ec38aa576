// The import directory: each DLL's imports and the IAT slot the loader fills for each.
#include <absl/strings/str_format.h>

#include "bytes.hpp"
#include "toolhost/pe/image.hpp"

namespace toolhost::pe {

using detail::u16;
using detail::u32;
using detail::u64;

absl::StatusOr<std::vector<import_entry>> image::imports() const {
  std::vector<import_entry> out;
  const data_directory dir = directory_entry(kImportDirectory);
  if (dir.rva == 0 || dir.size == 0) return out;
  const size_t thunk = is_64() ? 8 : 4;
  const uint64_t ordinal_flag = is_64() ? (1ULL << 63) : (1ULL << 31);
  // Every descriptor takes 20 bytes and every thunk `thunk` bytes of the image: counts past
  // SizeOfImage are corrupt, and they bound the walk.
  const uint32_t max_descriptors = header().size_of_image / 20;
  uint64_t budget = header().size_of_image / thunk;
  for (uint32_t d = 0;; ++d) {
    if (d >= max_descriptors) return error("the import directory does not end within the image");
    auto raw = read(static_cast<uint32_t>(dir.rva + uint64_t{d} * 20), 20);
    if (!raw.ok()) return raw.status();
    const uint32_t lookup = u32(*raw, 0);
    const uint32_t name_rva = u32(*raw, 12);
    const uint32_t iat = u32(*raw, 16);
    if (lookup == 0 && name_rva == 0 && iat == 0) break;  // the all-zero descriptor ends the list
    auto dll = read_string(name_rva, 256);
    if (!dll.ok()) return dll.status();
    // The lookup table names the imports; a bound or old image may have only the IAT.
    const uint32_t names = lookup != 0 ? lookup : iat;
    for (uint32_t i = 0;; ++i) {
      if (budget-- == 0) return error(absl::StrFormat("the imports of %s do not end within the image", *dll));
      const uint64_t at = uint64_t{names} + uint64_t{i} * thunk;
      if (at > UINT32_MAX) return error(absl::StrFormat("the imports of %s run past 4 GiB", *dll));
      auto entry = read(static_cast<uint32_t>(at), thunk);
      if (!entry.ok()) return entry.status();
      const uint64_t value = is_64() ? u64(*entry, 0) : u32(*entry, 0);
      if (value == 0) break;
      import_entry e;
      e.dll = *dll;
      e.slot = static_cast<uint32_t>(iat + uint64_t{i} * thunk);
      if ((value & ordinal_flag) != 0) {
        e.ordinal = static_cast<uint16_t>(value & 0xffff);
      } else {
        auto hint = read(static_cast<uint32_t>(value & 0x7fffffff), 2);
        if (!hint.ok()) return hint.status();
        e.hint = u16(*hint, 0);
        auto name = read_string(static_cast<uint32_t>((value & 0x7fffffff) + 2), 1024);
        if (!name.ok()) return name.status();
        e.name = std::move(*name);
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace toolhost::pe
