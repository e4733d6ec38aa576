// The export directory: names, ordinals, RVAs and forwarders.
#include <algorithm>

#include <absl/strings/str_format.h>

#include "bytes.hpp"
#include "toolhost/pe/image.hpp"

namespace toolhost::pe {

using detail::u16;
using detail::u32;

absl::StatusOr<export_table> image::exports() const {
  export_table table;
  const data_directory dir = directory_entry(kExportDirectory);
  if (dir.rva == 0 || dir.size == 0) return table;
  auto raw = read(dir.rva, 40);
  if (!raw.ok()) return raw.status();
  const uint32_t name_rva = u32(*raw, 12);
  table.timestamp = u32(*raw, 4);
  table.ordinal_base = u32(*raw, 16);
  const uint32_t function_count = u32(*raw, 20);
  const uint32_t name_count = u32(*raw, 24);
  const uint32_t functions_rva = u32(*raw, 28);
  const uint32_t names_rva = u32(*raw, 32);
  const uint32_t ordinals_rva = u32(*raw, 36);
  // Each function takes 4 bytes of the image and each name 6: counts beyond that are corrupt.
  if (uint64_t{function_count} * 4 > header().size_of_image || uint64_t{name_count} * 6 > header().size_of_image) {
    return error(
        absl::StrFormat("the export directory declares %u functions and %u names", function_count, name_count));
  }
  if (name_count > function_count) {
    return error(absl::StrFormat("the export directory has %u names for %u functions", name_count, function_count));
  }
  if (name_rva != 0) {
    auto dll = read_string(name_rva, 256);
    if (dll.ok()) table.dll_name = *dll;
  }
  auto functions = read(functions_rva, size_t{function_count} * 4);
  if (!functions.ok()) return functions.status();
  std::vector<std::string> names(function_count);
  if (name_count > 0) {
    auto name_rvas = read(names_rva, size_t{name_count} * 4);
    if (!name_rvas.ok()) return name_rvas.status();
    auto ordinals = read(ordinals_rva, size_t{name_count} * 2);
    if (!ordinals.ok()) return ordinals.status();
    for (uint32_t i = 0; i < name_count; ++i) {
      const uint16_t index = u16(*ordinals, i * 2);
      if (index >= function_count) {
        return error(absl::StrFormat("export name %u points at function %u of %u", i, index, function_count));
      }
      auto name = read_string(u32(*name_rvas, i * 4), 1024);
      if (!name.ok()) return name.status();
      // Two names for one function: keep the first, as the loader's lookup by ordinal does.
      if (names[index].empty()) names[index] = std::move(*name);
    }
  }
  for (uint32_t i = 0; i < function_count; ++i) {
    const uint32_t rva = u32(*functions, i * 4);
    if (rva == 0 && names[i].empty()) continue;  // an empty ordinal slot
    export_entry e;
    e.ordinal = table.ordinal_base + i;
    e.name = std::move(names[i]);
    if (rva >= dir.rva && rva - dir.rva < dir.size) {
      // An RVA inside the export directory is a forwarder string, "DLL.Function".
      auto forwarder = read_string(rva, 512);
      if (!forwarder.ok()) return forwarder.status();
      e.forwarder = std::move(*forwarder);
    } else {
      e.rva = rva;
    }
    table.entries.push_back(std::move(e));
  }
  return table;
}

}  // namespace toolhost::pe
