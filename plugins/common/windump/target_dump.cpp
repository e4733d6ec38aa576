#include <toolhost/windump/target_dump.hpp>

#include <cstring>
#include <map>

#include <absl/strings/str_format.h>
#include <rapidjson/document.h>

namespace toolhost::windump {
namespace {

void append(void* ctx, const char* data, size_t size) { static_cast<std::string*>(ctx)->append(data, size); }

uint64_t number(const rapidjson::Value& v) {
  if (v.IsUint64()) return v.GetUint64();
  if (v.IsString()) return std::strtoull(v.GetString(), nullptr, 0);
  return 0;
}

uint64_t hint(const rapidjson::Value& hints, const char* name) {
  return hints.IsObject() && hints.HasMember(name) ? number(hints[name]) : 0;
}

}  // namespace

absl::StatusOr<full_dump_result> dump_target(toolhost_debug_target_t* t, const std::string& path,
                                             const target_dump_options& options) {
  if ((t->capabilities(t) & TOOLHOST_DT_CAP_READ_PHYSICAL) == 0) {
    return absl::FailedPreconditionError("this target cannot read physical memory, which a full dump is made of");
  }
  std::string described;
  toolhost_writer_t w{&described, append};
  t->describe(t, &w);
  rapidjson::Document d;
  d.Parse(described.c_str(), described.size());
  if (d.HasParseError() || !d.IsObject()) return absl::InternalError("the target's describe() is not a JSON object");
  static const rapidjson::Value kEmpty(rapidjson::kObjectType);
  const rapidjson::Value& hints = d.HasMember("hints") ? d["hints"] : kEmpty;

  full_dump_request q;
  q.comment = options.comment;
  q.directory_table_base = hint(hints, "dtb");
  q.ps_loaded_module_list = hint(hints, "module_list_head");
  q.ps_active_process_head = hint(hints, "ps_active_process_head");
  q.kd_debugger_data_block = hint(hints, "kd_debugger_data_block");
  if (hints.IsObject() && hints.HasMember("bugcheck") && hints["bugcheck"].IsObject()) {
    const rapidjson::Value& b = hints["bugcheck"];
    if (b.HasMember("code")) q.bugcheck_code = static_cast<uint32_t>(number(b["code"]));
    if (b.HasMember("parameters") && b["parameters"].IsArray()) {
      for (rapidjson::SizeType i = 0; i < b["parameters"].Size() && i < 4; ++i)
        q.bugcheck_parameters[i] = number(b["parameters"][i]);
    }
  }

  // Registers of the current thread / vCPU, by name from the register map.
  std::map<std::string, uint64_t> regs;
  if ((t->capabilities(t) & TOOLHOST_DT_CAP_REGISTERS) != 0 && d.HasMember("registers") && d["registers"].IsArray()) {
    std::vector<uint8_t> buffer(8192);
    size_t done = 0;
    if (t->read_registers(t, -1, buffer.data(), buffer.size(), &done, nullptr) == TOOLHOST_OK) {
      for (const auto& r : d["registers"].GetArray()) {
        if (!r.IsObject() || !r.HasMember("name") || !r.HasMember("offset") || !r.HasMember("bits")) continue;
        const uint64_t offset = number(r["offset"]);
        const uint64_t bytes = std::min<uint64_t>(8, number(r["bits"]) / 8);
        if (offset + bytes > done) continue;
        uint64_t v = 0;
        std::memcpy(&v, buffer.data() + offset, bytes);
        regs[r["name"].GetString()] = v;
      }
    }
  }
  auto reg = [&](std::initializer_list<const char*> names) -> uint64_t {
    for (const char* n : names) {
      if (auto it = regs.find(n); it != regs.end()) return it->second;
    }
    return 0;
  };
  amd64_context& c = q.context;
  c.rax = reg({"rax"}), c.rbx = reg({"rbx"}), c.rcx = reg({"rcx"}), c.rdx = reg({"rdx"});
  c.rsi = reg({"rsi"}), c.rdi = reg({"rdi"}), c.rbp = reg({"rbp"}), c.rsp = reg({"rsp"});
  c.r8 = reg({"r8"}), c.r9 = reg({"r9"}), c.r10 = reg({"r10"}), c.r11 = reg({"r11"});
  c.r12 = reg({"r12"}), c.r13 = reg({"r13"}), c.r14 = reg({"r14"}), c.r15 = reg({"r15"});
  c.rip = reg({"rip", "pc"});
  c.eflags = static_cast<uint32_t>(reg({"eflags", "rflags", "efl"}));
  c.cs = static_cast<uint16_t>(reg({"cs"})), c.ss = static_cast<uint16_t>(reg({"ss"}));
  c.ds = static_cast<uint16_t>(reg({"ds"})), c.es = static_cast<uint16_t>(reg({"es"}));
  c.fs = static_cast<uint16_t>(reg({"fs"})), c.gs = static_cast<uint16_t>(reg({"gs"}));
  if (q.directory_table_base == 0) q.directory_table_base = reg({"cr3"});

  std::string threads;
  toolhost_writer_t tw{&threads, append};
  t->list_threads(t, &tw);
  rapidjson::Document td;
  td.Parse(threads.c_str(), threads.size());
  q.number_processors = !td.HasParseError() && td.IsArray() && td.Size() > 0 ? td.Size() : 1;

  auto read_page = [t](uint64_t pa, std::span<uint8_t> page) -> absl::Status {
    size_t done = 0;
    if (t->read_memory(t, TOOLHOST_DT_PHYSICAL, pa, page.data(), page.size(), &done, nullptr) != TOOLHOST_OK ||
        done != page.size()) {
      return absl::NotFoundError("unreadable");
    }
    return absl::OkStatus();
  };

  q.ranges = options.ranges;
  if (q.ranges.empty() && hints.IsObject() && hints.HasMember("ram") && hints["ram"].IsArray()) {
    for (const auto& r : hints["ram"].GetArray()) {
      if (!r.IsObject() || !r.HasMember("start") || !r.HasMember("end")) continue;
      const uint64_t start = number(r["start"]);
      const uint64_t end = number(r["end"]);
      if (end > start) q.ranges.push_back({start, end - start});
    }
  }
  if (q.ranges.empty()) {
    constexpr uint64_t kChunk = 2ull << 20;
    uint8_t probe = 0;
    for (uint64_t at = 0; at < options.probe_limit; at += kChunk) {
      size_t done = 0;
      if (t->read_memory(t, TOOLHOST_DT_PHYSICAL, at, &probe, 1, &done, nullptr) != TOOLHOST_OK || done != 1) continue;
      if (!q.ranges.empty() && q.ranges.back().start + q.ranges.back().size == at) {
        q.ranges.back().size += kChunk;
      } else {
        q.ranges.push_back({at, kChunk});
      }
    }
    if (q.ranges.empty()) return absl::NotFoundError("no physical memory of the target could be read");
  }
  return write_full_dump(path, q, read_page, options.cancelled);
}

}  // namespace toolhost::windump
