#include "windump_generator.hpp"

#include <cstring>

namespace toolhost::test {
namespace {

template <typename T>
void put(std::vector<uint8_t>& b, uint64_t at, T v) {
  if (b.size() < at + sizeof v) b.resize(at + sizeof v);
  std::memcpy(b.data() + at, &v, sizeof v);
}

uint32_t fourcc(const char s[5]) {
  uint32_t v;
  std::memcpy(&v, s, 4);
  return v;
}

// Contiguous runs of the page map, in order.
std::vector<std::pair<uint64_t, uint64_t>> runs_of(const dump_spec& spec) {
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  for (const auto& [pfn, _] : spec.pages) {
    if (!runs.empty() && runs.back().first + runs.back().second == pfn) {
      ++runs.back().second;
    } else {
      runs.emplace_back(pfn, 1);
    }
  }
  return runs;
}

}  // namespace

std::vector<uint8_t> generate_dump(const dump_spec& spec) {
  std::vector<uint8_t> d(0x2000, 0);
  for (uint64_t i = 0; i < 0x2000; i += 4) put<uint32_t>(d, i, fourcc("PAGE"));
  put<uint32_t>(d, 0x000, fourcc("PAGE"));
  put<uint32_t>(d, 0x004, fourcc("DU64"));
  put<uint32_t>(d, 0x008, 15);
  put<uint32_t>(d, 0x00c, 19041);
  put<uint64_t>(d, 0x010, spec.dtb);
  put<uint64_t>(d, 0x018, 0xfffffa8000000000);
  put<uint64_t>(d, 0x020, spec.ps_loaded_module_list);
  put<uint64_t>(d, 0x028, spec.ps_active_process_head);
  put<uint32_t>(d, 0x030, 0x8664);
  put<uint32_t>(d, 0x034, spec.processors);
  put<uint32_t>(d, 0x038, spec.bugcheck_code);
  put<uint32_t>(d, 0x03c, 0);
  for (int i = 0; i < 4; ++i) put<uint64_t>(d, 0x040 + 8 * i, spec.bugcheck_parameters[i]);
  put<uint64_t>(d, 0x080, spec.kd_debugger_data_block);
  std::memset(d.data() + 0x088, 0, 700);
  // CONTEXT at 0x348.
  std::memset(d.data() + 0x348, 0, 3000);
  const generated_context& c = spec.context;
  put<uint32_t>(d, 0x348 + 0x30, 0x10001f);
  put<uint16_t>(d, 0x348 + 0x38, c.cs);
  put<uint16_t>(d, 0x348 + 0x3a, c.ds);
  put<uint16_t>(d, 0x348 + 0x3c, c.es);
  put<uint16_t>(d, 0x348 + 0x3e, c.fs);
  put<uint16_t>(d, 0x348 + 0x40, c.gs);
  put<uint16_t>(d, 0x348 + 0x42, c.ss);
  put<uint32_t>(d, 0x348 + 0x44, c.eflags);
  const uint64_t gprs[] = {c.rax, c.rcx, c.rdx, c.rbx, c.rsp, c.rbp, c.rsi, c.rdi, c.r8,
                           c.r9,  c.r10, c.r11, c.r12, c.r13, c.r14, c.r15, c.rip};
  for (int i = 0; i < 17; ++i) put<uint64_t>(d, 0x348 + 0x78 + 8 * i, gprs[i]);
  std::memset(d.data() + 0xf00, 0, 0x98);
  put<uint32_t>(d, 0xf00, 0xc0000005);
  put<uint64_t>(d, 0xf10, c.rip);
  put<uint32_t>(d, 0xf98, spec.type);
  put<uint32_t>(d, 0xf9c, 0);
  put<uint64_t>(d, 0xfa8, 0x01d9000000000000);
  std::memset(d.data() + 0xfb0, 0, 128);
  std::memcpy(d.data() + 0xfb0, "toolhost test dump", 18);

  const auto runs = runs_of(spec);
  uint64_t total = spec.pages.size();
  std::vector<uint8_t> body;
  if (spec.type == 1) {
    put<uint32_t>(d, 0x088, static_cast<uint32_t>(runs.size()));
    put<uint64_t>(d, 0x090, total);
    for (size_t i = 0; i < runs.size(); ++i) {
      put<uint64_t>(d, 0x098 + 16 * i, runs[i].first);
      put<uint64_t>(d, 0x098 + 16 * i + 8, runs[i].second);
    }
  } else if (spec.type == 5 || spec.type == 6) {
    const uint64_t bits = spec.pages.empty() ? 0 : spec.pages.rbegin()->first + 1;
    const uint64_t bitmap_bytes = (bits + 7) / 8;
    std::vector<uint8_t> h(0x38 + bitmap_bytes, 0);
    put<uint32_t>(h, 0x00, fourcc(spec.type == 5 ? "SDMP" : "FDMP"));
    put<uint32_t>(h, 0x04, fourcc("DUMP"));
    const uint64_t first_page = (0x2000 + h.size() + 0xfff) & ~0xfffull;
    put<uint64_t>(h, 0x20, first_page);
    put<uint64_t>(h, 0x28, total);
    put<uint64_t>(h, 0x30, bits);
    for (const auto& [pfn, _] : spec.pages) h[0x38 + pfn / 8] |= static_cast<uint8_t>(1u << (pfn % 8));
    h.resize(first_page - 0x2000, 0);
    body = std::move(h);
  } else {
    // RDMP: 0x20-byte header, 16 type-specific bytes, ranges, a zero terminator.
    const uint64_t metadata = 0x10 + 16 * (runs.size() + 1);
    std::vector<uint8_t> h(0x20 + metadata, 0);
    put<uint32_t>(h, 0x00, 0x40);
    put<uint32_t>(h, 0x04, fourcc("RDMP"));
    put<uint32_t>(h, 0x08, fourcc("DUMP"));
    put<uint64_t>(h, 0x10, metadata);
    put<uint64_t>(h, 0x18, 0x2000 + 0x20 + metadata);
    if (spec.type == 10) {
      put<uint32_t>(h, 0x20, static_cast<uint32_t>(runs.size()));
      put<uint64_t>(h, 0x28, total);
    }
    for (size_t i = 0; i < runs.size(); ++i) {
      put<uint64_t>(h, 0x30 + 16 * i, runs[i].first);
      put<uint64_t>(h, 0x30 + 16 * i + 8, runs[i].second);
    }
    body = std::move(h);
  }
  d.insert(d.end(), body.begin(), body.end());
  for (const auto& [pfn, bytes] : spec.pages) d.insert(d.end(), bytes.begin(), bytes.end());
  if (spec.required_dump_space) put<uint64_t>(d, 0xfa0, d.size());
  return d;
}

uint8_t sample_byte(uint64_t pa) { return static_cast<uint8_t>(((pa >> 12) * 31 + (pa & 0xfff) * 7) & 0xff); }

dump_spec sample_system(uint32_t type) {
  dump_spec s;
  s.type = type;
  s.dtb = 0x1000;
  auto table = [&](uint64_t pfn) -> std::vector<uint8_t>& {
    auto& p = s.pages[pfn];
    p.resize(0x1000, 0);
    return p;
  };
  auto entry = [](std::vector<uint8_t>& t, uint64_t index, uint64_t value) {
    std::memcpy(t.data() + index * 8, &value, 8);
  };
  // PML4 (0x1000)[496] -> PDPT 0x2000; PDPT[0] -> PD 0x3000, PDPT[1] = 1 GiB page at 0x40000000;
  // PD[0] -> PT 0x4000, PD[1] = 2 MiB page at 0x200000; PT[0x10] -> 0x10000.
  entry(table(1), 496, 0x2000 | 3);
  entry(table(2), 0, 0x3000 | 3);
  entry(table(2), 1, 0x40000000ull | 0x83);
  entry(table(3), 0, 0x4000 | 3);
  entry(table(3), 1, 0x200000 | 0x83 | (1ull << 63));
  entry(table(4), 0x10, 0x10000 | 3);
  // PsLoadedModuleList (0xfffff80000012000, PT[0x12] -> PA 0x12000): the list head and two
  // LDR_DATA_TABLE_ENTRYs (InLoadOrderLinks at 0, DllBase 0x30, SizeOfImage 0x40,
  // FullDllName 0x48, BaseDllName 0x58; UNICODE_STRING = Length, MaximumLength, Buffer at +8).
  entry(table(4), 0x12, 0x12000 | 3);
  auto& list = table(0x12);
  auto put64 = [&](uint64_t at, uint64_t v) { std::memcpy(list.data() + at, &v, 8); };
  auto put16 = [&](uint64_t at, uint16_t v) { std::memcpy(list.data() + at, &v, 2); };
  auto name = [&](uint64_t at, uint64_t string_at, const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) put16(string_at + 2 * i, static_cast<uint8_t>(text[i]));
    put16(at, static_cast<uint16_t>(2 * text.size()));
    put16(at + 2, static_cast<uint16_t>(2 * text.size() + 2));
    put64(at + 8, 0xfffff80000012000 + string_at);
  };
  const uint64_t head = 0xfffff80000012000, first = head + 0x100, second = head + 0x200;
  put64(0x000, first);
  put64(0x008, second);
  put64(0x100, second);
  put64(0x108, head);
  put64(0x130, 0xfffff80000400000);
  put64(0x140, 0xa00000);
  name(0x148, 0x800, "\\SystemRoot\\system32\\ntoskrnl.exe");
  name(0x158, 0x900, "ntoskrnl.exe");
  put64(0x200, head);
  put64(0x208, first);
  put64(0x230, 0xfffff80000e00000);
  put64(0x240, 0x80000);
  name(0x248, 0xa00, "\\SystemRoot\\system32\\hal.dll");
  name(0x258, 0xb00, "hal.dll");
  for (uint64_t pfn : {0x10ull, 0x205ull, 0x206ull, 0x40007ull}) {
    auto& p = s.pages[pfn];
    p.resize(0x1000);
    for (uint64_t k = 0; k < 0x1000; ++k) p[k] = sample_byte(pfn * 0x1000 + k);
  }
  return s;
}

std::vector<header_field> header_fields(uint32_t type) {
  std::vector<header_field> f = {
      {"Signature", 0x000, 4},
      {"ValidDump", 0x004, 4},
      {"MajorVersion", 0x008, 4},
      {"MinorVersion", 0x00c, 4},
      {"DirectoryTableBase", 0x010, 8},
      {"PfnDatabase", 0x018, 8},
      {"PsLoadedModuleList", 0x020, 8},
      {"PsActiveProcessHead", 0x028, 8},
      {"MachineImageType", 0x030, 4},
      {"NumberProcessors", 0x034, 4},
      {"BugCheckCode", 0x038, 4},
      {"BugCheckParameter1", 0x040, 8},
      {"BugCheckParameter4", 0x058, 8},
      {"KdDebuggerDataBlock", 0x080, 8},
      {"ContextRecord.Rip", 0x348 + 0xf8, 8},
      {"ContextRecord.Rsp", 0x348 + 0x98, 8},
      {"Exception.ExceptionCode", 0xf00, 4},
      {"DumpType", 0xf98, 4},
      {"RequiredDumpSpace", 0xfa0, 8},
      {"SystemTime", 0xfa8, 8},
      {"Comment", 0xfb0, 8},
      {"SystemUpTime", 0x1030, 8},
  };
  if (type == 1) {
    f.push_back({"PhysicalMemoryBlock.NumberOfRuns", 0x088, 4});
    f.push_back({"PhysicalMemoryBlock.NumberOfPages", 0x090, 8});
    f.push_back({"PhysicalMemoryBlock.Run", 0x098, 8});  // Run[0].BasePage
    f.push_back({"PhysicalMemoryBlock.Run", 0x0a0, 8});  // Run[0].PageCount
  } else if (type == 5 || type == 6) {
    f.push_back({"bitmap header Signature", 0x2000, 4});
    f.push_back({"bitmap header ValidDump", 0x2004, 4});
    f.push_back({"bitmap header FirstPage", 0x2020, 8});
    f.push_back({"bitmap header TotalPresentPages", 0x2028, 8});
    f.push_back({"bitmap header Pages", 0x2030, 8});
    f.push_back({"bitmap", 0x2038, 1});
  } else {
    f.push_back({"RDMP header Marker", 0x2000, 4});
    f.push_back({"RDMP header Signature", 0x2004, 4});
    f.push_back({"RDMP header ValidDump", 0x2008, 4});
    f.push_back({"RDMP header MetadataSize", 0x2010, 8});
    f.push_back({"RDMP header FirstPageOffset", 0x2018, 8});
    if (type == 10) {
      f.push_back({"RDMP header NumberOfRanges", 0x2020, 4});
      f.push_back({"RDMP header TotalNumberOfPages", 0x2028, 8});
    }
    f.push_back({"RDMP range", 0x2030, 8});
    f.push_back({"RDMP range", 0x2038, 8});
  }
  return f;
}

}  // namespace toolhost::test
