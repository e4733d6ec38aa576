#include "windows_dump.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include <absl/strings/str_format.h>
#include <toolhost/paging/page_walk.hpp>
#include <toolhost/text/utf16.hpp>
#include <toolhost/windump/dump_reader.hpp>

namespace toolhost::dump_backend {
namespace {

using namespace toolhost::snapshots;  // the snapshot model and its x86 register names

class windows_dump final : public snapshot {
 public:
  windows_dump(std::unique_ptr<mapped_file> file, windump::dump_reader reader)
      : file_(std::move(file)), reader_(std::move(reader)) {
    const windump::amd64_context& c = reader_.header().context;
    registers = {rax, rbx, rcx, rdx, rsi,    rdi, rbp, rsp, r8, r9, r10, r11, r12,
                 r13, r14, r15, rip, eflags, cs,  ss,  ds,  es, fs, gs,  cr3};
    thread_state t;
    t.id = 0;
    t.name = "processor 0 (context record)";
    t.values = {c.rax, c.rbx, c.rcx,    c.rdx, c.rsi,
                c.rdi, c.rbp, c.rsp,    c.r8,  c.r9,
                c.r10, c.r11, c.r12,    c.r13, c.r14,
                c.r15, c.rip, c.eflags, c.cs,  c.ss,
                c.ds,  c.es,  c.fs,     c.gs,  reader_.header().directory_table_base};
    threads.push_back(std::move(t));
    walk_module_list();
  }

  const char* os() const override { return "windows"; }
  const char* kind() const override { return "system"; }
  bool has_physical() const override { return true; }
  bool has_virtual() const override { return true; }

  absl::StatusOr<size_t> read_physical(uint64_t address, std::span<uint8_t> out) override {
    const size_t n = reader_.read_physical(address, out);
    if (n == 0)
      return absl::NotFoundError(absl::StrFormat("physical page 0x%x is not in the dump", address & ~0xfffull));
    return n;
  }

  absl::StatusOr<size_t> read_virtual(uint64_t address, std::span<uint8_t> out, int64_t) override {
    return paging::read_virtual(
        reader_.header().directory_table_base, address, out,
        [this](uint64_t pa, std::span<uint8_t> buf) { return reader_.read_physical_exact(pa, buf); });
  }

  toolhost_dt_stop_t initial_stop() const override {
    const windump::header_facts& h = reader_.header();
    toolhost_dt_stop_t s{};
    s.struct_size = sizeof s;
    s.thread = 0;
    s.pc = h.context.rip;
    if (h.bugcheck_code != 0) {
      s.reason = TOOLHOST_DT_STOP_BUGCHECK;
      s.code = h.bugcheck_code;
      std::snprintf(s.description, sizeof s.description, "Bugcheck 0x%08x (0x%llx, 0x%llx, 0x%llx, 0x%llx)",
                    h.bugcheck_code, static_cast<unsigned long long>(h.bugcheck_parameters[0]),
                    static_cast<unsigned long long>(h.bugcheck_parameters[1]),
                    static_cast<unsigned long long>(h.bugcheck_parameters[2]),
                    static_cast<unsigned long long>(h.bugcheck_parameters[3]));
    } else {
      s.reason = TOOLHOST_DT_STOP_UNKNOWN;
      std::snprintf(s.description, sizeof s.description, "Windows %s dump (no bugcheck)",
                    windump::dump_type_name(h.dump_type));
    }
    return s;
  }

  std::string hints_json() const override {
    const windump::header_facts& h = reader_.header();
    std::string comment;
    for (char c : h.comment) {
      if (c == '"' || c == '\\') comment += '\\';
      if (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) comment += c;
    }
    return absl::StrFormat(
               "\"format\":\"windows-dump\",\"dump_type\":%u,\"dump_type_name\":\"%s\",\"dtb\":\"0x%x\","
               "\"module_list_head\":\"0x%x\",\"ps_active_process_head\":\"0x%x\",\"kd_debugger_data_block\":\"0x%x\","
               "\"pfn_database\":\"0x%x\",\"number_processors\":%u,\"version\":\"%u.%u\","
               "\"bugcheck\":{\"code\":\"0x%x\",\"parameters\":[\"0x%x\",\"0x%x\",\"0x%x\",\"0x%x\"]},"
               "\"exception\":{\"code\":\"0x%x\",\"address\":\"0x%x\"},\"present_pages\":%u,\"comment\":\"%s\"",
               h.dump_type, windump::dump_type_name(h.dump_type), h.directory_table_base, h.ps_loaded_module_list,
               h.ps_active_process_head, h.kd_debugger_data_block, h.pfn_database, h.number_processors, h.major_version,
               h.minor_version, h.bugcheck_code, h.bugcheck_parameters[0], h.bugcheck_parameters[1],
               h.bugcheck_parameters[2], h.bugcheck_parameters[3], h.exception_code, h.exception_address,
               reader_.present_pages(), comment) +
           (modules.empty() ? std::string() : absl::StrFormat(",\"kernel_base\":\"0x%x\"", modules.front().base)) +
           ram_json();
  }

  // Follows PsLoadedModuleList (LDR_DATA_TABLE_ENTRY, x64 layout) as far as the dump holds
  // it; a list the dump lacks leaves the module list empty rather than failing the open.
  void walk_module_list() {
    const uint64_t head = reader_.header().ps_loaded_module_list;
    if (head == 0) return;
    auto read = [this](uint64_t va, std::span<uint8_t> out) {
      absl::StatusOr<size_t> n = read_virtual(va, out, 0);
      return n.ok() && *n == out.size();
    };
    auto u64 = [](const uint8_t* p) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    };
    uint8_t link[8];
    if (!read(head, link)) return;
    uint64_t entry = u64(link);
    for (int count = 0; entry != head && entry != 0 && count < 4096; ++count) {
      uint8_t e[0x68];
      if (!read(entry, e)) return;
      module_info m;
      m.base = u64(e + 0x30);
      uint32_t size;
      std::memcpy(&size, e + 0x40, 4);
      m.size = size;
      m.path = unicode_string(e + 0x48);
      m.name = unicode_string(e + 0x58);
      if (m.name.empty()) m.name = m.path.substr(m.path.find_last_of('\\') + 1);
      modules.push_back(std::move(m));
      entry = u64(e);
    }
  }

  // A UNICODE_STRING's text (UTF-16LE, up to 1024 bytes) as UTF-8; "" when unreadable.
  std::string unicode_string(const uint8_t* us) {
    uint16_t length;
    std::memcpy(&length, us, 2);
    uint64_t buffer;
    std::memcpy(&buffer, us + 8, 8);
    length = std::min<uint16_t>(length & ~1, 1024);
    std::vector<uint8_t> raw(length);
    absl::StatusOr<size_t> n = read_virtual(buffer, raw, 0);
    if (!n.ok() || *n != raw.size()) return "";
    return toolhost::text::utf16le_to_utf8(raw);
  }

  std::string ram_json() const {
    if (reader_.runs().size() > 4096) return "";  // too sparse to list; a reader probes instead
    std::string ram;
    for (const windump::page_run& r : reader_.runs()) {
      ram += absl::StrFormat("%s{\"start\":\"0x%x\",\"end\":\"0x%x\"}", ram.empty() ? "" : ",", r.first_page * 0x1000,
                             (r.first_page + r.page_count) * 0x1000);
    }
    return ",\"ram\":[" + ram + "]";
  }

  const char* why_no_run_control() const override {
    return "A crash dump is a snapshot and does not run: resume, step, interrupt and breakpoints need a live target "
           "(kd, kdnet or gdb).";
  }

 private:
  std::unique_ptr<mapped_file> file_;
  windump::dump_reader reader_;
};

}  // namespace

bool looks_like_windows_dump(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "PAGE", 4) == 0;
}

absl::StatusOr<std::unique_ptr<snapshot>> open_windows_dump(std::unique_ptr<mapped_file> file) {
  absl::StatusOr<windump::dump_reader> reader = windump::dump_reader::parse(file->bytes());
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<snapshot>(std::make_unique<windows_dump>(std::move(file), std::move(*reader)));
}

}  // namespace toolhost::dump_backend
