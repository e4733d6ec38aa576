#include "toolhost/analysis/image.hpp"

#include <algorithm>
#include <cstdio>

#include <absl/status/status.h>

namespace toolhost::analysis {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

template <class T>
const T* last_at_or_below(const std::vector<T>& sorted, uint64_t address) {
  auto it =
      std::upper_bound(sorted.begin(), sorted.end(), address, [](uint64_t a, const T& s) { return a < s.address; });
  return it == sorted.begin() ? nullptr : &*std::prev(it);
}

}  // namespace

std::string_view to_string(file_format f) {
  switch (f) {
    case file_format::elf: return "elf";
    case file_format::pe: return "pe";
  }
  return "elf";
}

std::string_view to_string(architecture a) {
  switch (a) {
    case architecture::x86: return "x86";
    case architecture::x86_64: return "x86_64";
    case architecture::other: return "other";
  }
  return "other";
}

image::image(std::string name, std::shared_ptr<const void> owner, std::string_view bytes, parts p)
    : name_(std::move(name)), owner_(std::move(owner)), bytes_(bytes), parts_(std::move(p)) {
  auto& ps = parts_;
  std::stable_sort(ps.sections.begin(), ps.sections.end(),
                   [](const section& a, const section& b) { return a.address < b.address; });
  std::stable_sort(ps.segments.begin(), ps.segments.end(),
                   [](const segment& a, const segment& b) { return a.address < b.address; });
  std::stable_sort(ps.symbols.begin(), ps.symbols.end(), [](const symbol& a, const symbol& b) {
    return a.address != b.address ? a.address < b.address : a.name < b.name;
  });
  std::stable_sort(ps.imports.begin(), ps.imports.end(),
                   [](const import_slot& a, const import_slot& b) { return a.slot < b.slot; });
  ps.imports.erase(std::unique(ps.imports.begin(), ps.imports.end(),
                               [](const import_slot& a, const import_slot& b) { return a.slot == b.slot; }),
                   ps.imports.end());
  std::sort(ps.unwind_extents.begin(), ps.unwind_extents.end(),
            [](const code_extent& a, const code_extent& b) { return a.start < b.start; });
  // A section or segment claiming bytes past the end of the file keeps only what is there.
  const auto clamp = [this](uint64_t offset, uint64_t& size) {
    size = offset >= bytes_.size() ? 0 : std::min<uint64_t>(size, bytes_.size() - offset);
  };
  for (section& s : ps.sections) clamp(s.file_offset, s.file_size);
  for (segment& s : ps.segments) clamp(s.file_offset, s.file_size);
}

const section* image::section_at(uint64_t address) const noexcept {
  const section* s = last_at_or_below(parts_.sections, address);
  // Sections can overlap in odd files; look back past a short neighbour.
  for (; s != nullptr && s >= parts_.sections.data(); --s) {
    if (s->contains(address)) return s;
    if (s == parts_.sections.data()) break;
  }
  return nullptr;
}

const import_slot* image::import_at(uint64_t slot) const noexcept {
  auto it = std::lower_bound(parts_.imports.begin(), parts_.imports.end(), slot,
                             [](const import_slot& i, uint64_t a) { return i.slot < a; });
  return it != parts_.imports.end() && it->slot == slot ? &*it : nullptr;
}

bool image::is_code(uint64_t address) const noexcept {
  const section* s = section_at(address);
  return s != nullptr && s->executable;
}

std::optional<uint64_t> image::file_offset(uint64_t address) const noexcept {
  if (!parts_.segments.empty()) {
    const segment* s = last_at_or_below(parts_.segments, address);
    for (; s != nullptr; --s) {
      if (address - s->address < s->file_size && address >= s->address) return s->file_offset + (address - s->address);
      if (s == parts_.segments.data()) break;
    }
    return std::nullopt;
  }
  const section* s = section_at(address);
  if (s == nullptr || address - s->address >= s->file_size) return std::nullopt;
  return s->file_offset + (address - s->address);
}

std::span<const uint8_t> image::file_bytes(uint64_t address, uint64_t size) const noexcept {
  if (size == 0) return {};
  auto first = file_offset(address);
  auto last = file_offset(address + size - 1);
  if (!first || !last || address + size - 1 < address || *last < *first || *last - *first != size - 1) return {};
  return {reinterpret_cast<const uint8_t*>(bytes_.data()) + *first, static_cast<size_t>(size)};
}

std::span<const uint8_t> image::section_bytes(const section& s) const noexcept {
  if (s.file_size == 0) return {};
  return {reinterpret_cast<const uint8_t*>(bytes_.data()) + s.file_offset, static_cast<size_t>(s.file_size)};
}

absl::StatusOr<std::string> image::read(uint64_t address, size_t size) const {
  std::string out;
  out.reserve(std::min<size_t>(size, 1 << 20));
  while (out.size() < size) {
    const uint64_t at = address + out.size();
    if (at < address) break;  // wrapped past the top of the address space
    uint64_t mapped_end = 0, file_end = 0, offset = 0;
    bool mapped = false;
    if (!parts_.segments.empty()) {
      for (const segment& s : parts_.segments) {
        if (at < s.address || at - s.address >= s.size) continue;
        mapped = true;
        mapped_end = s.end();
        file_end = s.address + s.file_size;
        offset = s.file_offset + (at - s.address);
        break;
      }
    } else if (const section* s = section_at(at)) {
      mapped = true;
      mapped_end = s->end();
      file_end = s->address + s->file_size;
      offset = s->file_offset + (at - s->address);
    }
    if (!mapped) break;
    const uint64_t want = std::min<uint64_t>(size - out.size(), mapped_end - at);
    if (at < file_end) {
      const uint64_t from_file = std::min<uint64_t>(want, file_end - at);
      out.append(bytes_.data() + offset, static_cast<size_t>(from_file));
    } else {
      out.append(static_cast<size_t>(want), '\0');  // .bss and the like
    }
  }
  if (out.empty() && size != 0) return absl::OutOfRangeError(hex(address) + " is not mapped by " + name_);
  return out;
}

}  // namespace toolhost::analysis
