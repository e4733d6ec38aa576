#include "kernel_memory.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <toolhost/windump/dump_writer.hpp>

namespace toolhost::test::windows {

namespace {
constexpr uint64_t kPresent = 1, kWritable = 2;
constexpr uint64_t kFrame = 0x000ffffffffff000ull;

uint32_t u32(const std::string& b, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint16_t u16(const std::string& b, size_t at) {
  uint16_t v = 0;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}
}  // namespace

kernel_memory::kernel_memory() {
  page(kDtb);
  write_u64(kDtb + kSelfMapIndex * 8, kDtb | kPresent | kWritable | (1ull << 63));
}

uint64_t kernel_memory::allocate_page() {
  const uint64_t p = next_free_;
  next_free_ += 0x1000;
  page(p);
  return p;
}

uint64_t kernel_memory::read_u64(uint64_t physical) {
  uint64_t v;
  std::memcpy(&v, page(physical).data() + (physical & 0xfff), 8);
  return v;
}

void kernel_memory::write_u64(uint64_t physical, uint64_t value) {
  std::memcpy(page(physical).data() + (physical & 0xfff), &value, 8);
}

uint64_t kernel_memory::entry_address(uint64_t dtb, uint64_t va, int level, bool user) {
  uint64_t table = dtb != 0 ? dtb : kDtb;
  for (int l = 0; l < level; ++l) {
    const uint64_t slot = table + ((va >> (39 - 9 * l)) & 0x1ff) * 8;
    uint64_t entry = read_u64(slot);
    if ((entry & kPresent) == 0) {
      entry = allocate_page() | kPresent | kWritable | (user ? kUserPage : 0);
      write_u64(slot, entry);
    }
    table = entry & kFrame;
  }
  return table + ((va >> (39 - 9 * level)) & 0x1ff) * 8;
}

uint64_t kernel_memory::physical_of(uint64_t va, uint64_t dtb) {
  uint64_t table = dtb != 0 ? dtb : kDtb;
  for (int level = 0; level < 4; ++level) {
    const uint64_t entry = read_u64(table + ((va >> (39 - 9 * level)) & 0x1ff) * 8);
    if ((entry & kPresent) == 0) return 0;
    if ((level == 1 || level == 2) && (entry & (1ull << 7))) {
      const uint64_t size = level == 1 ? 1ull << 30 : 1ull << 21;
      return (entry & kFrame & ~(size - 1)) | (va & (size - 1));
    }
    table = entry & kFrame;
  }
  return table | (va & 0xfff);
}

void kernel_memory::map(uint64_t va, uint64_t size, uint64_t flags, uint64_t dtb) {
  const bool user = (flags & kUserPage) != 0;
  for (uint64_t p = va & ~0xfffull; p < va + size; p += 0x1000) {
    const uint64_t slot = entry_address(dtb, p, 3, user);
    if ((read_u64(slot) & kPresent) == 0) write_u64(slot, allocate_page() | kPresent | flags);
  }
}

void kernel_memory::map_large(uint64_t va, uint64_t pa, uint64_t page_size, uint64_t flags) {
  const int level = page_size == (1ull << 30) ? 1 : 2;
  write_u64(entry_address(0, va, level, false), (pa & kFrame) | kPresent | (1ull << 7) | flags);
}

uint64_t kernel_memory::new_address_space() {
  const uint64_t dtb = allocate_page();
  for (int i = 256; i < 512; ++i) write_u64(dtb + i * 8, read_u64(kDtb + i * 8));
  write_u64(dtb + kSelfMapIndex * 8, dtb | kPresent | kWritable | (1ull << 63));
  return dtb;
}

void kernel_memory::unmap_page(uint64_t va, uint64_t dtb) { write_u64(entry_address(dtb, va, 3, false), 0); }

void kernel_memory::set_pte(uint64_t va, uint64_t value, uint64_t dtb) {
  write_u64(entry_address(dtb, va, 3, false), value);
}

void kernel_memory::write(uint64_t va, const void* data, size_t size, uint64_t dtb) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  for (size_t done = 0; done < size;) {
    const uint64_t pa = physical_of(va + done, dtb);
    if (pa == 0) throw std::runtime_error("kernel_memory: write to an unmapped address");
    const size_t n = std::min<size_t>(size - done, 0x1000 - ((va + done) & 0xfff));
    std::memcpy(page(pa).data() + (pa & 0xfff), bytes + done, n);
    done += n;
  }
}

void kernel_memory::put_unicode_string(uint64_t va, uint64_t buffer_va, const std::string& ascii, uint64_t dtb) {
  std::vector<uint8_t> wide;
  for (char c : ascii) {
    wide.push_back(static_cast<uint8_t>(c));
    wide.push_back(0);
  }
  write(buffer_va, wide.data(), wide.size(), dtb);
  put<uint16_t>(va, static_cast<uint16_t>(wide.size()), dtb);
  put<uint16_t>(va + 2, static_cast<uint16_t>(wide.size()), dtb);
  put<uint64_t>(va + 8, buffer_va, dtb);
}

void kernel_memory::load_image(kernel_module& m) {
  std::ifstream in(m.file, std::ios::binary);
  if (!in) throw std::runtime_error("kernel_memory: cannot open " + m.file);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint32_t pe = u32(file, 0x3c);
  const uint16_t sections = u16(file, pe + 6);
  const uint16_t optional_size = u16(file, pe + 20);
  const size_t opt = pe + 24;
  m.timestamp = u32(file, pe + 8);
  m.size = u32(file, opt + 56);
  const uint32_t headers = u32(file, opt + 60);
  m.checksum = u32(file, opt + 64);
  map(m.base, 0x1000, kWritablePage | kNoExecutePage);  // the header page, not executable
  map(m.base, m.size);
  write(m.base, file.data(), std::min<size_t>(headers, file.size()));
  std::vector<std::pair<uint32_t, std::pair<uint32_t, uint32_t>>> layout;  // va -> (raw offset, raw size)
  for (uint16_t i = 0; i < sections; ++i) {
    const size_t s = opt + optional_size + i * 40;
    const uint32_t va = u32(file, s + 12), raw_size = u32(file, s + 16), raw = u32(file, s + 20);
    if (raw_size > 0 && raw + raw_size <= file.size()) write(m.base + va, file.data() + raw, raw_size);
    layout.push_back({va, {raw, raw_size}});
  }
  // Base relocations, as the loader applies them when the image is not at its preferred base.
  const uint64_t preferred = u16(file, opt) == 0x20b ? [&] { uint64_t v; std::memcpy(&v, file.data() + opt + 24, 8); return v; }()
                                                      : u32(file, opt + 28);
  const size_t directories = opt + (u16(file, opt) == 0x20b ? 112 : 96);
  const uint32_t reloc_rva = u32(file, directories + 5 * 8), reloc_size = u32(file, directories + 5 * 8 + 4);
  auto file_offset = [&](uint32_t rva) -> size_t {
    for (const auto& [va, raw] : layout) {
      if (rva >= va && rva - va < raw.second) return raw.first + (rva - va);
    }
    throw std::runtime_error("kernel_memory: relocation RVA outside the file");
  };
  const int64_t delta = static_cast<int64_t>(m.base - preferred);
  for (uint32_t at = 0; reloc_size != 0 && at + 8 <= reloc_size;) {
    const size_t block = file_offset(reloc_rva + at);
    const uint32_t page = u32(file, block), size = u32(file, block + 4);
    if (size < 8) break;
    for (uint32_t e = 8; e + 2 <= size; e += 2) {
      const uint16_t entry = u16(file, block + e);
      const uint32_t rva = page + (entry & 0xfff);
      if ((entry >> 12) == 10) {  // IMAGE_REL_BASED_DIR64
        uint64_t v;
        std::memcpy(&v, file.data() + file_offset(rva), 8);
        put<uint64_t>(m.base + rva, v + static_cast<uint64_t>(delta));
      } else if ((entry >> 12) == 3) {  // IMAGE_REL_BASED_HIGHLOW
        put<uint32_t>(m.base + rva, u32(file, file_offset(rva)) + static_cast<uint32_t>(delta));
      }
    }
    at += size;
  }
}

void kernel_memory::module_list(uint64_t head, uint64_t entries, const std::vector<kernel_module>& modules) {
  constexpr uint64_t kEntry = 0xa0, kNames = 0x200;  // one entry, then its two names, per module
  map(head, 16);
  map(entries, modules.size() * (kEntry + kNames) + 0x1000);
  std::vector<uint64_t> at;
  for (size_t i = 0; i < modules.size(); ++i) at.push_back(entries + i * (kEntry + kNames));
  for (size_t i = 0; i < modules.size(); ++i) {
    const kernel_module& m = modules[i];
    const uint64_t e = at[i];
    put<uint64_t>(e + 0x00, i + 1 < modules.size() ? at[i + 1] : head);  // Flink
    put<uint64_t>(e + 0x08, i > 0 ? at[i - 1] : head);                   // Blink
    put<uint64_t>(e + 0x30, m.base);
    put<uint32_t>(e + 0x40, m.size);
    put_unicode_string(e + 0x48, e + kEntry, m.full_name);
    put_unicode_string(e + 0x58, e + kEntry + 0x100, m.base_name);
    put<uint32_t>(e + 0x78, m.checksum);
    put<uint32_t>(e + 0x9c, m.timestamp);
  }
  put<uint64_t>(head, modules.empty() ? head : at.front());
  put<uint64_t>(head + 8, modules.empty() ? head : at.back());
}

absl::Status kernel_memory::write_dump(const std::string& path, uint64_t module_list_head, uint64_t rip) const {
  dump_header h;
  h.module_list_head = module_list_head;
  h.rip = rip;
  return write_dump(path, h);
}

absl::Status kernel_memory::write_dump(const std::string& path, const dump_header& header) const {
  windump::full_dump_request request;
  // Runs of present pages (a large page's unwritten pages are not kept).
  for (const auto& [pa, bytes] : pages_) {
    if (!request.ranges.empty() && request.ranges.back().start + request.ranges.back().size == pa) {
      request.ranges.back().size += 0x1000;
    } else {
      request.ranges.push_back({pa, 0x1000});
    }
  }
  request.directory_table_base = header.dtb;
  request.ps_loaded_module_list = header.module_list_head;
  request.ps_active_process_head = header.active_process_head;
  request.kd_debugger_data_block = header.kd_debugger_data_block;
  request.context.rip = header.rip;
  request.context.rsp = header.rsp;
  request.comment = "toolhost symbol test kernel";
  const auto* pages = &pages_;
  auto result = windump::write_full_dump(path, request, [pages](uint64_t address, std::span<uint8_t> out) {
    auto it = pages->find(address & ~0xfffull);
    if (it == pages->end()) {
      std::memset(out.data(), 0, out.size());
    } else {
      std::memcpy(out.data(), it->second.data(), out.size());
    }
    return absl::OkStatus();
  });
  return result.ok() ? absl::OkStatus() : result.status();
}

}  // namespace toolhost::test::windows
