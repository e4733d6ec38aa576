// image_from_pe: a PE file's headers and sections, exports, IAT slots, .pdata function extents
// and TLS callbacks, as an analysis image at the image's preferred base.
#include <toolhost/pe/image.hpp>

#include "toolhost/analysis/image.hpp"

namespace toolhost::analysis {
namespace {

constexpr uint32_t kMemExecute = 0x20000000;
constexpr uint32_t kMemRead = 0x40000000;
constexpr uint32_t kMemWrite = 0x80000000;
constexpr uint16_t kFileDll = 0x2000;
constexpr uint8_t kUnwindChained = 4;  // UNW_FLAG_CHAININFO: a continuation of another function

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case pe::kMachineAmd64: return "x86-64";
    case pe::kMachineI386: return "i386";
    case pe::kMachineArm64: return "ARM64";
    default: return "machine " + std::to_string(machine);
  }
}

uint64_t little_endian(std::string_view b, size_t at, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size && at + i < b.size(); ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(b[at + i])) << (8 * i);
  return v;
}

// TLS callbacks: the loader calls each before the entry point (IMAGE_TLS_DIRECTORY's
// AddressOfCallBacks, a null-terminated array of virtual addresses).
std::vector<loader_call> tls_callbacks(const pe::image& pe) {
  std::vector<loader_call> out;
  const pe::data_directory dir = pe.directory_entry(pe::kTlsDirectory);
  if (dir.rva == 0 || dir.size == 0) return out;
  const size_t word = pe.is_64() ? 8 : 4;
  auto tls = pe.read(dir.rva, 4 * word);
  if (!tls.ok()) return out;
  const uint64_t callbacks = little_endian(*tls, 3 * word, word);
  const uint64_t base = pe.header().image_base;
  if (callbacks < base || callbacks - base > pe.header().size_of_image) return out;
  for (size_t i = 0; i < 64; ++i) {
    auto entry = pe.read(static_cast<uint32_t>(callbacks - base + i * word), word);
    if (!entry.ok()) break;
    const uint64_t va = little_endian(*entry, 0, word);
    if (va == 0) break;
    out.push_back({va, "tls_callback_" + std::to_string(i)});
  }
  return out;
}

}  // namespace

image image_from_pe(std::shared_ptr<const pe::image> file) {
  const pe::image& pe = *file;
  const pe::headers& h = pe.header();
  image::parts p;
  p.format = file_format::pe;
  p.arch = h.machine == pe::kMachineAmd64  ? architecture::x86_64
           : h.machine == pe::kMachineI386 ? architecture::x86
                                           : architecture::other;
  p.machine = machine_name(h.machine);
  p.kind = (h.characteristics & kFileDll) != 0 ? "shared-library" : "executable";
  p.image_base = h.image_base;
  if (h.entry_point != 0) p.entry = h.image_base + h.entry_point;

  // The headers are mapped too (Ghidra's "Headers" block): read_bytes at the image base works.
  section headers;
  headers.name = "Headers";
  headers.address = h.image_base;
  headers.size = h.size_of_headers;
  headers.file_offset = 0;
  headers.file_size = h.size_of_headers;
  p.sections.push_back(headers);
  for (const pe::section& s : pe.sections()) {
    if (s.extent() == 0) continue;
    section out;
    out.name = s.name;
    out.address = h.image_base + s.virtual_address;
    out.size = s.extent();
    out.file_offset = s.raw_offset;
    out.file_size = std::min(s.raw_size, s.extent());
    out.readable = (s.characteristics & kMemRead) != 0;
    out.writable = (s.characteristics & kMemWrite) != 0;
    out.executable = (s.characteristics & kMemExecute) != 0;
    p.sections.push_back(std::move(out));
  }

  if (auto exports = pe.exports(); exports.ok()) {
    for (const pe::export_entry& e : exports->entries) {
      if (!e.forwarder.empty() || e.rva == 0) continue;
      symbol s;
      s.name = e.name.empty() ? "Ordinal_" + std::to_string(e.ordinal) : e.name;  // Ghidra's name for one
      s.address = h.image_base + e.rva;
      const pe::section* in = pe.section_at(e.rva);
      s.kind = in != nullptr && in->executable() ? symbol_kind::function : symbol_kind::object;
      s.global = true;
      p.symbols.push_back(std::move(s));
    }
  }
  if (auto imports = pe.imports(); imports.ok()) {
    for (const pe::import_entry& i : *imports) {
      const std::string name = i.name.empty() ? "Ordinal_" + std::to_string(i.ordinal) : i.name;
      p.imports.push_back({h.image_base + i.slot, name, i.dll});
    }
  }
  if (auto functions = pe.runtime_functions(); functions.ok()) {
    for (const pe::runtime_function& f : *functions) {
      if (f.end <= f.begin) continue;
      auto unwind = pe.unwind(f.unwind_info);
      if (unwind.ok() && (unwind->flags & kUnwindChained) != 0) continue;
      p.unwind_extents.push_back({h.image_base + f.begin, h.image_base + f.end});
    }
  }
  p.loader_calls = tls_callbacks(pe);

  std::string name = pe.name();
  const std::string_view bytes = pe.file_bytes();
  return image(std::move(name), std::move(file), bytes, std::move(p));
}

std::optional<std::string> pe_truncation(const pe::image& file) {
  const uint64_t size = file.file_bytes().size();
  for (const pe::section& s : file.sections()) {
    if (s.raw_size != 0 && uint64_t{s.raw_offset} + s.raw_size > size) {
      return "section " + s.name + " ends at byte " + std::to_string(uint64_t{s.raw_offset} + s.raw_size) +
             ", past the end of the file (" + std::to_string(size) + " bytes)";
    }
  }
  return std::nullopt;
}

}  // namespace toolhost::analysis
