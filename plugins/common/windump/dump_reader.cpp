#include <toolhost/windump/dump_reader.hpp>

#include <algorithm>
#include <bit>
#include <cstring>

#include <absl/strings/str_format.h>
#include <toolhost/windump/layout.hpp>

namespace toolhost::windump {
namespace {

namespace L = layout;

template <typename T>
T load(std::span<const uint8_t> bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

// Pages the file can hold after `offset` (0 when offset is past the end).
uint64_t pages_after(std::span<const uint8_t> file, uint64_t offset) {
  return offset >= file.size() ? 0 : (file.size() - offset) / L::kPageSize;
}

// A page number whose address fits in 52 physical address bits.
constexpr uint64_t kMaxPage = (1ull << 40);

absl::Status bad(const char* field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("bad Windows dump: %s %s", field, why));
}

// Sorts runs, merges neighbours, refuses overlaps (the same page stored twice).
absl::Status normalize(std::vector<page_run>& runs, const char* field) {
  std::sort(runs.begin(), runs.end(), [](const page_run& a, const page_run& b) { return a.first_page < b.first_page; });
  std::vector<page_run> merged;
  merged.reserve(runs.size());
  for (const page_run& r : runs) {
    if (r.page_count == 0) continue;
    if (!merged.empty()) {
      page_run& last = merged.back();
      const uint64_t last_end = last.first_page + last.page_count;
      if (r.first_page < last_end) {
        return bad(field, absl::StrFormat("lists physical page 0x%x twice", r.first_page));
      }
      if (r.first_page == last_end && r.file_offset == last.file_offset + last.page_count * L::kPageSize) {
        last.page_count += r.page_count;
        continue;
      }
    }
    merged.push_back(r);
  }
  runs = std::move(merged);
  return absl::OkStatus();
}

absl::Status parse_full(std::span<const uint8_t> file, std::vector<page_run>& runs, uint64_t& pages) {
  const uint64_t base = L::kOffPhysicalMemoryBlock;
  const uint32_t number_of_runs = load<uint32_t>(file, base);
  const uint64_t number_of_pages = load<uint64_t>(file, base + 8);
  if (number_of_runs == 0 || number_of_pages == 0) {
    // Windows writes every physical page of a complete dump; an empty run list is a broken or
    // hand-made file, and opening it would give a target where every read fails.
    return bad(number_of_runs == 0 ? "PhysicalMemoryBlock.NumberOfRuns" : "PhysicalMemoryBlock.NumberOfPages",
               "is 0: the dump holds no physical memory, so there is nothing to debug in it");
  }
  if (number_of_runs > L::kMaxRuns) {
    return bad("PhysicalMemoryBlock.NumberOfRuns",
               absl::StrFormat("is %u; the 700-byte descriptor holds at most %u", number_of_runs, L::kMaxRuns));
  }
  const uint64_t room = pages_after(file, L::kHeaderSize);
  if (number_of_pages > room) {
    return absl::OutOfRangeError(
        absl::StrFormat("truncated Windows dump: PhysicalMemoryBlock.NumberOfPages is %u but the file holds only %u "
                        "pages after the header",
                        number_of_pages, room));
  }
  uint64_t offset = L::kHeaderSize;
  uint64_t sum = 0;
  for (uint32_t i = 0; i < number_of_runs; ++i) {
    const uint64_t at = base + L::kRunsOffset + i * 16ull;
    const uint64_t first = load<uint64_t>(file, at);
    const uint64_t count = load<uint64_t>(file, at + 8);
    if (first >= kMaxPage || count > kMaxPage || first + count > kMaxPage) {
      return bad(
          "PhysicalMemoryBlock.Run",
          absl::StrFormat("%u (BasePage 0x%x, PageCount 0x%x) lies beyond 52-bit physical memory", i, first, count));
    }
    if (count > number_of_pages - sum) {
      return bad("PhysicalMemoryBlock.Run",
                 absl::StrFormat("%u ends after NumberOfPages (%u) pages", i, number_of_pages));
    }
    runs.push_back({first, count, offset});
    offset += count * L::kPageSize;
    sum += count;
  }
  if (sum != number_of_pages) {
    return bad("PhysicalMemoryBlock.NumberOfPages",
               absl::StrFormat("is %u but the runs add up to %u pages", number_of_pages, sum));
  }
  pages = sum;
  return normalize(runs, "PhysicalMemoryBlock.Run");
}

absl::Status parse_bitmap(std::span<const uint8_t> file, std::vector<page_run>& runs, uint64_t& pages) {
  const uint64_t h = L::kHeaderSize;
  if (file.size() < h + L::kBmpOffBitmap) {
    return absl::OutOfRangeError("truncated Windows dump: the file ends inside the bitmap header at 0x2000");
  }
  const uint32_t signature = load<uint32_t>(file, h);
  if (signature != L::kBmpSignatureS && signature != L::kBmpSignatureF) {
    return bad("bitmap header Signature", absl::StrFormat("is 0x%08x, not \"SDMP\" or \"FDMP\"", signature));
  }
  if (load<uint32_t>(file, h + 4) != L::kBmpValidDump) {
    return bad("bitmap header ValidDump", absl::StrFormat("is 0x%08x, not \"DUMP\"", load<uint32_t>(file, h + 4)));
  }
  const uint64_t first_page = load<uint64_t>(file, h + L::kBmpOffFirstPage);
  const uint64_t total_present = load<uint64_t>(file, h + L::kBmpOffTotalPresentPages);
  const uint64_t bits = load<uint64_t>(file, h + L::kBmpOffPages);
  if (bits > kMaxPage)
    return bad("bitmap header Pages", absl::StrFormat("is 0x%x, beyond 52-bit physical memory", bits));
  const uint64_t bitmap_bytes = (bits + 7) / 8;
  const uint64_t bitmap_at = h + L::kBmpOffBitmap;
  if (bitmap_bytes > file.size() - bitmap_at) {
    return absl::OutOfRangeError(absl::StrFormat(
        "truncated Windows dump: the bitmap of %u pages needs %u bytes at 0x%x but the file is %u bytes", bits,
        bitmap_bytes, bitmap_at, file.size()));
  }
  if (first_page < bitmap_at + bitmap_bytes || first_page > file.size()) {
    return bad("bitmap header FirstPage",
               absl::StrFormat("(0x%x) is not between the end of the bitmap (0x%x) and the end of the file (0x%x)",
                               first_page, bitmap_at + bitmap_bytes, file.size()));
  }
  const uint64_t room = pages_after(file, first_page);
  if (total_present > room) {
    return absl::OutOfRangeError(absl::StrFormat(
        "truncated Windows dump: bitmap header TotalPresentPages is %u but the file holds only %u pages from FirstPage",
        total_present, room));
  }
  uint64_t offset = first_page;
  uint64_t count = 0;
  const uint8_t* bitmap = file.data() + bitmap_at;
  for (uint64_t byte = 0; byte < bitmap_bytes; ++byte) {
    uint8_t v = bitmap[byte];
    if (byte == bitmap_bytes - 1 && bits % 8 != 0) v &= static_cast<uint8_t>((1u << (bits % 8)) - 1);  // padding bits
    while (v != 0) {
      const int bit = std::countr_zero(v);
      v &= static_cast<uint8_t>(v - 1);
      if (++count > total_present) {
        return bad("bitmap header TotalPresentPages",
                   absl::StrFormat("is %u but the bitmap has more bits set", total_present));
      }
      const uint64_t page = byte * 8 + static_cast<uint64_t>(bit);
      if (!runs.empty() && runs.back().first_page + runs.back().page_count == page) {
        ++runs.back().page_count;
      } else {
        runs.push_back({page, 1, offset});
      }
      offset += L::kPageSize;
    }
  }
  if (count != total_present) {
    return bad("bitmap header TotalPresentPages",
               absl::StrFormat("is %u but the bitmap has %u bits set", total_present, count));
  }
  if (count == 0)
    return bad("bitmap header TotalPresentPages",
               "is 0: the dump holds no physical memory, so there is nothing to debug in it");
  pages = count;
  return absl::OkStatus();
}

absl::Status parse_rdmp(std::span<const uint8_t> file, uint32_t type, std::vector<page_run>& runs, uint64_t& pages) {
  const uint64_t h = L::kHeaderSize;
  if (file.size() < h + L::kRdmpOffRanges) {
    return absl::OutOfRangeError("truncated Windows dump: the file ends inside the RDMP header at 0x2000");
  }
  if (load<uint32_t>(file, h) != L::kRdmpMarker) {
    return bad("RDMP header Marker", absl::StrFormat("is 0x%x, not 0x40", load<uint32_t>(file, h)));
  }
  if (load<uint32_t>(file, h + 4) != L::kRdmpSignature) {
    return bad("RDMP header Signature", absl::StrFormat("is 0x%08x, not \"RDMP\"", load<uint32_t>(file, h + 4)));
  }
  if (load<uint32_t>(file, h + 8) != L::kRdmpValidDump) {
    return bad("RDMP header ValidDump", absl::StrFormat("is 0x%08x, not \"DUMP\"", load<uint32_t>(file, h + 8)));
  }
  const uint64_t metadata_size = load<uint64_t>(file, h + L::kRdmpOffMetadataSize);
  const uint64_t first_page_offset = load<uint64_t>(file, h + L::kRdmpOffFirstPageOffset);
  const uint64_t metadata_at = h + L::kRdmpMetadataStart;
  if (metadata_size < L::kRdmpOffRanges - L::kRdmpMetadataStart || metadata_size > file.size() - metadata_at) {
    return bad("RDMP header MetadataSize",
               absl::StrFormat("(0x%x) does not fit in the file (0x%x bytes)", metadata_size, file.size()));
  }
  if (first_page_offset != metadata_at + metadata_size) {
    return bad("RDMP header FirstPageOffset",
               absl::StrFormat("is 0x%x; the metadata ends at 0x%x", first_page_offset, metadata_at + metadata_size));
  }
  const uint64_t room = pages_after(file, first_page_offset);
  const uint64_t ranges_at = h + L::kRdmpOffRanges;
  const uint64_t ranges_end = metadata_at + metadata_size;
  uint64_t offset = first_page_offset;
  uint64_t sum = 0;
  uint64_t number = 0;
  for (uint64_t at = ranges_at; at + 16 <= ranges_end; at += 16) {
    const uint64_t first = load<uint64_t>(file, at);
    const uint64_t count = load<uint64_t>(file, at + 8);
    if (first == 0) break;  // a zero page number ends the list
    if (first >= kMaxPage || count > kMaxPage || first + count > kMaxPage) {
      return bad("RDMP range",
                 absl::StrFormat("%u (PageFileNumber 0x%x, NumberOfPages 0x%x) lies beyond 52-bit physical memory",
                                 number, first, count));
    }
    if (count > room - sum) {
      return absl::OutOfRangeError(
          absl::StrFormat("truncated Windows dump: RDMP range %u needs pages beyond the end of the file (%u pages from "
                          "FirstPageOffset)",
                          number, room));
    }
    runs.push_back({first, count, offset});
    offset += count * L::kPageSize;
    sum += count;
    ++number;
  }
  if (type == L::kTypeComplete) {
    const uint32_t declared_ranges = load<uint32_t>(file, h + L::kRdmpOffNumberOfRanges);
    const uint64_t declared_pages = load<uint64_t>(file, h + L::kRdmpOffTotalNumberOfPages);
    if (declared_ranges != number) {
      return bad("RDMP header NumberOfRanges",
                 absl::StrFormat("is %u but the metadata lists %u ranges", declared_ranges, number));
    }
    if (declared_pages != sum) {
      return bad("RDMP header TotalNumberOfPages",
                 absl::StrFormat("is %u but the ranges add up to %u", declared_pages, sum));
    }
  }
  pages = sum;
  return normalize(runs, "RDMP range");
}

amd64_context read_context(std::span<const uint8_t> file) {
  namespace C = L::context;
  const uint64_t c = L::kOffContextRecord;
  amd64_context x;
  x.rax = load<uint64_t>(file, c + C::kRax);
  x.rcx = load<uint64_t>(file, c + C::kRcx);
  x.rdx = load<uint64_t>(file, c + C::kRdx);
  x.rbx = load<uint64_t>(file, c + C::kRbx);
  x.rsp = load<uint64_t>(file, c + C::kRsp);
  x.rbp = load<uint64_t>(file, c + C::kRbp);
  x.rsi = load<uint64_t>(file, c + C::kRsi);
  x.rdi = load<uint64_t>(file, c + C::kRdi);
  uint64_t* high[] = {&x.r8, &x.r9, &x.r10, &x.r11, &x.r12, &x.r13, &x.r14, &x.r15};
  for (int i = 0; i < 8; ++i) *high[i] = load<uint64_t>(file, c + C::kR8 + 8ull * i);
  x.rip = load<uint64_t>(file, c + C::kRip);
  x.eflags = load<uint32_t>(file, c + C::kEFlags);
  x.cs = load<uint16_t>(file, c + C::kSegCs);
  x.ds = load<uint16_t>(file, c + C::kSegDs);
  x.es = load<uint16_t>(file, c + C::kSegEs);
  x.fs = load<uint16_t>(file, c + C::kSegFs);
  x.gs = load<uint16_t>(file, c + C::kSegGs);
  x.ss = load<uint16_t>(file, c + C::kSegSs);
  return x;
}

}  // namespace

const char* dump_type_name(uint32_t type) {
  switch (type) {
    case L::kTypeFull: return "full";
    case L::kTypeBitmap: return "bitmap";
    case L::kTypeLiveKernelBitmap: return "live kernel bitmap";
    case L::kTypeKernel: return "kernel";
    case L::kTypeKernelAndUser: return "kernel and user";
    case L::kTypeComplete: return "complete";
    default: return "unknown";
  }
}

absl::StatusOr<dump_reader> dump_reader::parse(std::span<const uint8_t> file) {
  if (file.size() < L::kHeaderSize) {
    return absl::OutOfRangeError(absl::StrFormat(
        "truncated Windows dump: the file is %u bytes, shorter than the 0x2000-byte DUMP_HEADER64", file.size()));
  }
  const uint32_t signature = load<uint32_t>(file, L::kOffSignature);
  if (signature != L::kSignature) {
    return bad("Signature", absl::StrFormat("is 0x%08x, not \"PAGE\": this is not a Windows crash dump", signature));
  }
  const uint32_t valid = load<uint32_t>(file, L::kOffValidDump);
  if (valid == L::kValidDump32)
    return bad("ValidDump", "is \"DUMP\": a 32-bit dump, which is not supported (only \"DU64\")");
  if (valid != L::kValidDump64) return bad("ValidDump", absl::StrFormat("is 0x%08x, not \"DU64\"", valid));
  const uint32_t machine = load<uint32_t>(file, L::kOffMachineImageType);
  if (machine != L::kMachineAmd64) {
    return bad("MachineImageType", absl::StrFormat("is 0x%x; only AMD64 (0x8664) dumps are supported", machine));
  }
  const uint32_t processors = load<uint32_t>(file, L::kOffNumberProcessors);
  if (processors == 0 || processors > 4096) {
    return bad("NumberProcessors", absl::StrFormat("is %u, not between 1 and 4096", processors));
  }
  const uint64_t required = load<uint64_t>(file, L::kOffRequiredDumpSpace);
  if (required > file.size()) {
    return absl::OutOfRangeError(absl::StrFormat(
        "truncated Windows dump: RequiredDumpSpace says 0x%x bytes but the file is 0x%x bytes", required, file.size()));
  }

  dump_reader r;
  r.file_ = file;
  header_facts& f = r.header_;
  f.dump_type = load<uint32_t>(file, L::kOffDumpType);
  f.major_version = load<uint32_t>(file, L::kOffMajorVersion);
  f.minor_version = load<uint32_t>(file, L::kOffMinorVersion);
  f.directory_table_base = load<uint64_t>(file, L::kOffDirectoryTableBase);
  f.pfn_database = load<uint64_t>(file, L::kOffPfnDatabase);
  f.ps_loaded_module_list = load<uint64_t>(file, L::kOffPsLoadedModuleList);
  f.ps_active_process_head = load<uint64_t>(file, L::kOffPsActiveProcessHead);
  f.kd_debugger_data_block = load<uint64_t>(file, L::kOffKdDebuggerDataBlock);
  f.number_processors = processors;
  f.bugcheck_code = load<uint32_t>(file, L::kOffBugCheckCode);
  for (int i = 0; i < 4; ++i) f.bugcheck_parameters[i] = load<uint64_t>(file, L::kOffBugCheckParameters + 8ull * i);
  f.exception_code = load<uint32_t>(file, L::kOffException + L::kExceptionCode);
  f.exception_address = load<uint64_t>(file, L::kOffException + L::kExceptionAddress);
  f.system_time = load<uint64_t>(file, L::kOffSystemTime);
  const char* comment = reinterpret_cast<const char*>(file.data() + L::kOffComment);
  f.comment.assign(comment, strnlen(comment, 128));
  f.context = read_context(file);

  absl::Status s;
  switch (f.dump_type) {
    case L::kTypeFull: s = parse_full(file, r.runs_, r.present_pages_); break;
    case L::kTypeBitmap:
    case L::kTypeLiveKernelBitmap: s = parse_bitmap(file, r.runs_, r.present_pages_); break;
    case L::kTypeKernel:
    case L::kTypeKernelAndUser:
    case L::kTypeComplete: s = parse_rdmp(file, f.dump_type, r.runs_, r.present_pages_); break;
    default:
      return bad(
          "DumpType",
          absl::StrFormat("is %u; supported: 1 (full), 5 and 6 (bitmap), 8, 9, 10 (kernel, kernel and user, complete)",
                          f.dump_type));
  }
  if (!s.ok()) return s;
  return r;
}

const page_run* dump_reader::find(uint64_t page) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), page,
                             [](uint64_t p, const page_run& r) { return p < r.first_page; });
  if (it == runs_.begin()) return nullptr;
  --it;
  return page < it->first_page + it->page_count ? &*it : nullptr;
}

size_t dump_reader::read_physical(uint64_t address, std::span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const uint64_t at = address + done;
    if (at < address) break;  // wrapped around
    const uint64_t page = at / L::kPageSize;
    const page_run* run = find(page);
    if (run == nullptr) break;
    const uint64_t in_run = (run->first_page + run->page_count) * L::kPageSize - at;
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(in_run, out.size() - done));
    const uint64_t offset = run->file_offset + (at - run->first_page * L::kPageSize);
    std::memcpy(out.data() + done, file_.data() + offset, chunk);
    done += chunk;
  }
  return done;
}

absl::Status dump_reader::read_physical_exact(uint64_t address, std::span<uint8_t> out) const {
  const size_t done = read_physical(address, out);
  if (done == out.size()) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrFormat("physical page 0x%x is not in the dump", (address + done) & ~(L::kPageSize - 1)));
}

}  // namespace toolhost::windump
