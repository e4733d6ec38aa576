#include <toolhost/paging/page_walk.hpp>

#include <algorithm>
#include <cstring>

#include <absl/strings/str_format.h>

namespace toolhost::paging {
namespace {

constexpr uint64_t kPresent = 1ull << 0;
constexpr uint64_t kWritable = 1ull << 1;
constexpr uint64_t kUser = 1ull << 2;
constexpr uint64_t kLarge = 1ull << 7;
constexpr uint64_t kNoExecute = 1ull << 63;
constexpr uint64_t kFrameMask = 0x000ffffffffff000ull;
constexpr const char* kLevelNames[] = {"PML4E", "PDPTE", "PDE", "PTE"};

}  // namespace

bool is_canonical(uint64_t va) {
  const uint64_t top = va >> 47;
  return top == 0 || top == 0x1ffff;
}

absl::StatusOr<translation> translate(uint64_t cr3, uint64_t va, const read_physical_fn& read) {
  if (!is_canonical(va)) {
    return absl::InvalidArgumentError(absl::StrFormat("0x%016x is not a canonical x86-64 address", va));
  }
  translation t;
  t.writable = true;
  t.user = true;
  uint64_t table = cr3_table(cr3);
  for (int level = 0; level < 4; ++level) {
    const int shift = 39 - 9 * level;
    const uint64_t index = (va >> shift) & 0x1ff;
    const uint64_t entry_address = table + index * 8;
    uint8_t raw[8];
    if (absl::Status s = read(entry_address, raw); !s.ok()) {
      return absl::Status(s.code(), absl::StrFormat("cannot read the %s of 0x%016x at physical 0x%x: %s",
                                                    kLevelNames[level], va, entry_address, s.message()));
    }
    uint64_t entry;
    std::memcpy(&entry, raw, sizeof entry);
    t.entries[level] = entry;
    t.entry_addresses[level] = entry_address;
    t.levels = level + 1;
    if ((entry & kPresent) == 0) {
      return absl::NotFoundError(
          absl::StrFormat("0x%016x is not mapped: its %s (0x%016x at physical 0x%x) is not present", va,
                          kLevelNames[level], entry, entry_address));
    }
    t.writable = t.writable && (entry & kWritable) != 0;
    t.user = t.user && (entry & kUser) != 0;
    t.no_execute = t.no_execute || (entry & kNoExecute) != 0;
    const bool leaf = level == 3 || ((level == 1 || level == 2) && (entry & kLarge) != 0);
    if (leaf) {
      t.page_size = 1ull << shift;
      // A large leaf keeps PAT in bit 12, so its frame is aligned to the page size.
      t.page_base = entry & kFrameMask & ~(t.page_size - 1);
      t.physical = t.page_base + (va & (t.page_size - 1));
      return t;
    }
    table = entry & kFrameMask;
  }
  return absl::InternalError("unreachable: the walk ended without a leaf");
}

absl::StatusOr<size_t> read_virtual(uint64_t cr3, uint64_t va, std::span<uint8_t> out, const read_physical_fn& read) {
  size_t done = 0;
  while (done < out.size()) {
    const uint64_t at = va + done;
    absl::StatusOr<translation> t = translate(cr3, at, read);
    if (!t.ok()) {
      if (done == 0) return t.status();
      break;
    }
    const uint64_t left_in_page = t->page_size - (at & (t->page_size - 1));
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(left_in_page, out.size() - done));
    if (absl::Status s = read(t->physical, out.subspan(done, chunk)); !s.ok()) {
      if (done == 0) return s;
      break;
    }
    done += chunk;
  }
  return done;
}

}  // namespace toolhost::paging
