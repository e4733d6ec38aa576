#include "toolhost/pe/image.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <absl/strings/str_format.h>

#include "bytes.hpp"

namespace toolhost::pe {

using detail::u16;
using detail::u32;
using detail::u64;

namespace {

// Limits well above any real image, so that a corrupt count cannot make us allocate or loop
// without bound.
constexpr uint32_t kMaxPeOffset = 0x10000;
constexpr uint32_t kMaxSections = 1024;
constexpr uint32_t kMaxImageSize = 0x80000000u;
constexpr size_t kMaxRead = 64u << 20;

constexpr std::string_view kHoleMarker = "is not present";

}  // namespace

bool is_hole(const absl::Status& status) {
  return absl::IsUnavailable(status) && std::string(status.message()).find(kHoleMarker) != std::string::npos;
}

absl::Status image::error(std::string_view what) const {
  return absl::InvalidArgumentError(absl::StrFormat("%s: bad PE image: %s", name_, what));
}

absl::StatusOr<image> image::open_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path.string() + ": no such readable file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError("cannot read " + path.string());
  return from_bytes(std::move(bytes), path.string());
}

absl::StatusOr<image> image::from_bytes(std::string bytes, std::string name) {
  image img;
  img.name_ = std::move(name);
  img.layout_ = layout::file;
  auto shared = std::make_shared<const std::string>(std::move(bytes));
  img.file_bytes_ = shared;
  img.read_ = [shared](uint64_t offset, std::span<uint8_t> out) -> size_t {
    if (offset >= shared->size()) return 0;
    const size_t n = std::min<uint64_t>(out.size(), shared->size() - offset);
    std::memcpy(out.data(), shared->data() + offset, n);
    return n;
  };
  if (absl::Status s = img.parse_headers(); !s.ok()) return s;
  return img;
}

absl::StatusOr<image> image::from_memory(std::string name, read_fn read) {
  image img;
  img.name_ = std::move(name);
  img.layout_ = layout::memory;
  img.read_ = std::move(read);
  if (absl::Status s = img.parse_headers(); !s.ok()) return s;
  return img;
}

absl::Status image::parse_headers() {
  // The DOS header, then the PE signature, file header and optional header at e_lfanew.
  std::string dos(0x40, '\0');
  const size_t got = read_(0, std::span(reinterpret_cast<uint8_t*>(dos.data()), dos.size()));
  if (got < 2) {
    if (layout_ == layout::memory) {
      return absl::UnavailableError(name_ + ": the image header " + std::string(kHoleMarker) + " in memory");
    }
    return error("the file is empty");
  }
  if (dos.compare(0, 2, "MZ") != 0) return error("no MZ signature at offset 0");
  if (got < 0x40) return error("the DOS header is truncated");
  const uint32_t pe_offset = u32(dos, 0x3c);
  if (pe_offset < 0x40 - 4 || pe_offset > kMaxPeOffset || pe_offset % 4 != 0) {
    return error(absl::StrFormat("e_lfanew is 0x%x", pe_offset));
  }
  // Signature (4) + file header (20) + the largest optional header (240).
  std::string nt(4 + 20 + 240, '\0');
  const size_t nt_got = read_(pe_offset, std::span(reinterpret_cast<uint8_t*>(nt.data()), nt.size()));
  if (nt_got < 24) {
    if (layout_ == layout::memory && nt_got == 0) {
      return absl::UnavailableError(
          absl::StrFormat("%s: the PE header at 0x%x %s in memory", name_, pe_offset, kHoleMarker));
    }
    return error(absl::StrFormat("the PE header at 0x%x is truncated", pe_offset));
  }
  nt.resize(nt_got);
  if (nt.compare(0, 4, std::string_view("PE\0\0", 4)) != 0) {
    return error(absl::StrFormat("no PE signature at e_lfanew (0x%x)", pe_offset));
  }
  headers h;
  h.pe_offset = pe_offset;
  h.machine = u16(nt, 4);
  h.number_of_sections = u16(nt, 6);
  h.timestamp = u32(nt, 8);
  const uint16_t optional_size = u16(nt, 20);
  h.characteristics = u16(nt, 22);
  const size_t opt = 24;
  if (optional_size < 2) return error("the optional header is missing");
  if (nt.size() < opt + std::min<size_t>(optional_size, 240)) return error("the optional header is truncated");
  const uint16_t magic = u16(nt, opt);
  if (magic != 0x10b && magic != 0x20b)
    return error(absl::StrFormat("optional header magic 0x%x is neither PE32 nor PE32+", magic));
  h.pe32_plus = magic == 0x20b;
  const size_t fixed = h.pe32_plus ? 112 : 96;  // up to and including NumberOfRvaAndSizes
  if (optional_size < fixed)
    return error(absl::StrFormat("the optional header is 0x%x bytes, less than 0x%x", optional_size, fixed));
  h.linker_major = static_cast<uint8_t>(nt[opt + 2]);
  h.linker_minor = static_cast<uint8_t>(nt[opt + 3]);
  h.entry_point = u32(nt, opt + 16);
  if (h.pe32_plus) {
    h.image_base = u64(nt, opt + 24);
  } else {
    h.image_base = u32(nt, opt + 28);
  }
  h.section_alignment = u32(nt, opt + 32);
  h.file_alignment = u32(nt, opt + 36);
  h.os_major = u16(nt, opt + 40);
  h.os_minor = u16(nt, opt + 42);
  h.image_major = u16(nt, opt + 44);
  h.image_minor = u16(nt, opt + 46);
  h.subsystem_major = u16(nt, opt + 48);
  h.subsystem_minor = u16(nt, opt + 50);
  h.size_of_image = u32(nt, opt + 56);
  h.size_of_headers = u32(nt, opt + 60);
  h.checksum = u32(nt, opt + 64);
  h.subsystem = u16(nt, opt + 68);
  h.dll_characteristics = u16(nt, opt + 70);
  uint32_t directory_count = 0;
  size_t directories_at = 0;
  if (h.pe32_plus) {
    h.stack_reserve = u64(nt, opt + 72);
    h.stack_commit = u64(nt, opt + 80);
    directory_count = u32(nt, opt + 108);
    directories_at = opt + 112;
  } else {
    h.stack_reserve = u32(nt, opt + 72);
    h.stack_commit = u32(nt, opt + 76);
    directory_count = u32(nt, opt + 92);
    directories_at = opt + 96;
  }
  if (h.size_of_image == 0 || h.size_of_image > kMaxImageSize) {
    return error(absl::StrFormat("SizeOfImage is 0x%x", h.size_of_image));
  }
  // Windows reads at most 16 directories whatever the count says; the optional header must
  // hold the ones it declares.
  directory_count = std::min<uint32_t>(directory_count, 16);
  if (directories_at + directory_count * 8 > opt + optional_size) {
    return error(absl::StrFormat("NumberOfRvaAndSizes (%u) does not fit in the optional header", directory_count));
  }
  for (uint32_t i = 0; i < directory_count; ++i) {
    h.directories.push_back({u32(nt, directories_at + i * 8), u32(nt, directories_at + i * 8 + 4)});
  }
  if (h.number_of_sections > kMaxSections)
    return error(absl::StrFormat("NumberOfSections is %u", h.number_of_sections));

  const uint64_t table_at = uint64_t{pe_offset} + opt + optional_size;
  std::string table(size_t{h.number_of_sections} * 40, '\0');
  const size_t table_got = read_(table_at, std::span(reinterpret_cast<uint8_t*>(table.data()), table.size()));
  if (table_got < table.size()) {
    if (layout_ == layout::memory) {
      return absl::UnavailableError(
          absl::StrFormat("%s: the section table at RVA 0x%x %s in memory", name_, table_at + table_got, kHoleMarker));
    }
    return error(
        absl::StrFormat("the section table (%u sections at 0x%x) is truncated", h.number_of_sections, table_at));
  }
  std::vector<section> sections;
  for (uint32_t i = 0; i < h.number_of_sections; ++i) {
    const std::string_view raw(table.data() + i * 40, 40);
    section s;
    s.name = std::string(raw.substr(0, 8));
    s.name.resize(std::strlen(s.name.c_str()));
    s.virtual_size = u32(raw, 8);
    s.virtual_address = u32(raw, 12);
    s.raw_size = u32(raw, 16);
    s.raw_offset = u32(raw, 20);
    s.characteristics = u32(raw, 36);
    if (uint64_t{s.virtual_address} + s.extent() > h.size_of_image + uint64_t{h.section_alignment}) {
      return error(absl::StrFormat("section %s (RVA 0x%x, size 0x%x) ends beyond SizeOfImage 0x%x", s.name,
                                   s.virtual_address, s.extent(), h.size_of_image));
    }
    sections.push_back(std::move(s));
  }
  headers_ = std::move(h);
  sections_ = std::move(sections);
  return absl::OkStatus();
}

const section* image::section_at(uint32_t rva) const noexcept {
  for (const auto& s : sections_) {
    if (s.contains(rva)) return &s;
  }
  return nullptr;
}

const section* image::find_section(std::string_view name) const noexcept {
  for (const auto& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

data_directory image::directory_entry(int index) const noexcept {
  if (index < 0 || static_cast<size_t>(index) >= headers_.directories.size()) return {};
  return headers_.directories[index];
}

absl::StatusOr<std::string> image::read(uint32_t rva, size_t size) const {
  if (size > kMaxRead) return error(absl::StrFormat("a read of 0x%x bytes at RVA 0x%x is too large", size, rva));
  if (uint64_t{rva} + size > headers_.size_of_image) {
    return error(absl::StrFormat("RVA 0x%x + 0x%x is beyond SizeOfImage 0x%x", rva, size, headers_.size_of_image));
  }
  std::string out(size, '\0');
  auto* data = reinterpret_cast<uint8_t*>(out.data());
  if (layout_ == layout::memory) {
    const size_t got = read_(rva, std::span(data, size));
    if (got < size) {
      return absl::UnavailableError(absl::StrFormat("%s: RVA 0x%x %s in memory (paged out or not captured)", name_,
                                                    uint64_t{rva} + got, kHoleMarker));
    }
    return out;
  }
  // File layout: the headers map 1:1, sections through their raw data.
  size_t done = 0;
  while (done < size) {
    const uint32_t at = static_cast<uint32_t>(rva + done);
    const section* s = section_at(at);
    uint64_t file_offset = 0, available = 0;
    if (s == nullptr && at >= headers_.size_of_headers) {
      // Between sections, or after the last one: the loader maps whole pages, zero-filled.
      uint32_t next = headers_.size_of_image;
      for (const auto& other : sections_) {
        if (other.virtual_address > at) next = std::min(next, other.virtual_address);
      }
      done += std::min<uint64_t>(next - at, size - done);
      continue;
    }
    if (s == nullptr) {
      file_offset = at;
      available = headers_.size_of_headers - at;
    } else {
      const uint32_t into = at - s->virtual_address;
      available = s->extent() - into;
      if (into >= s->raw_size) {
        // Declared but not in the file (.bss): the loader zero-fills it.
        const size_t n = std::min<uint64_t>(available, size - done);
        done += n;
        continue;
      }
      file_offset = uint64_t{s->raw_offset} + into;
      available = std::min<uint64_t>(available, s->raw_size - into);
    }
    const size_t want = std::min<uint64_t>(available, size - done);
    const size_t got = read_(file_offset, std::span(data + done, want));
    if (got < want) {
      return error(
          absl::StrFormat("RVA 0x%x (file offset 0x%x) is beyond the end of the file", at + got, file_offset + got));
    }
    done += want;
  }
  return out;
}

absl::StatusOr<std::string> image::read_string(uint32_t rva, size_t max) const {
  std::string out;
  // In chunks that do not cross a page, so a string just before a missing page still reads.
  while (out.size() < max) {
    const uint32_t at = static_cast<uint32_t>(rva + out.size());
    if (at >= headers_.size_of_image)
      return error(absl::StrFormat("the string at RVA 0x%x runs beyond SizeOfImage", rva));
    const size_t chunk = std::min<size_t>({0x1000 - (at & 0xfff), max - out.size(), headers_.size_of_image - at});
    auto piece = read(at, chunk);
    if (!piece.ok()) return piece.status();
    const size_t nul = piece->find('\0');
    if (nul != std::string::npos) return out + piece->substr(0, nul);
    out += *piece;
  }
  return error(absl::StrFormat("the string at RVA 0x%x is longer than %u bytes", rva, max));
}

}  // namespace toolhost::pe
