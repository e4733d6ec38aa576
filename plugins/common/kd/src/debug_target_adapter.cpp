#include "toolhost/kd/debug_target_adapter.h"

#include <cstring>
#include <optional>

#include <absl/strings/str_format.h>
#include <toolhost/sdk/debug_target.hpp>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "toolhost/kd/bytes.h"
#include "toolhost/kd/protocol.h"
#include "toolhost/kd/register_map.h"

namespace toolhost::kd {
namespace {

namespace sdk = toolhost::sdk;

uint64_t field(std::span<const uint8_t> b, size_t at, uint32_t bits) {
  if (bits == 16) return get_u16(b, at);
  if (bits == 32) return get_u32(b, at);
  return get_u64(b, at);
}
void set_field(std::vector<uint8_t>& b, size_t at, uint32_t bits, uint64_t v) {
  if (bits == 16)
    put_u16(b, at, static_cast<uint16_t>(v));
  else if (bits == 32)
    put_u32(b, at, static_cast<uint32_t>(v));
  else
    put_u64(b, at, v);
}

std::string hex(uint64_t v) { return absl::StrFormat("\"0x%x\"", v); }

uint16_t processor_of(target& t, int64_t thread) {
  return thread < 0 ? t.current_processor() : static_cast<uint16_t>(thread);
}

// A number argument given as a JSON integer or a "0x..." / decimal string.
std::optional<uint64_t> number(const rapidjson::Value& args, const char* name) {
  const rapidjson::Value* v = sdk::member(args, name);
  if (v == nullptr) return std::nullopt;
  if (v->IsUint64()) return v->GetUint64();
  if (v->IsString()) {
    const std::string s(sdk::as_view(*v));
    char* end = nullptr;
    errno = 0;
    const uint64_t n = std::strtoull(s.c_str(), &end, 0);
    if (!s.empty() && end != nullptr && *end == '\0' && errno == 0) return n;
  }
  return std::nullopt;
}

// Hardware kinds of the debug-target types; x86 watches reads only together with writes.
std::optional<target::hw_kind> hardware_kind(toolhost_dt_breakpoint_type_t type) {
  switch (type) {
    case TOOLHOST_DT_BP_HARDWARE: return target::hw_kind::execute;
    case TOOLHOST_DT_BP_WRITE: return target::hw_kind::write;
    case TOOLHOST_DT_BP_READ:
    case TOOLHOST_DT_BP_ACCESS: return target::hw_kind::access;
    default: return std::nullopt;
  }
}

// The SDK's debug_target over a kd::target: one class for every KD wire (KDCOM, KDNET).
class kd_session final : public sdk::debug_target {
 public:
  explicit kd_session(std::unique_ptr<target> t) : debug_target("kd"), t_(std::move(t)) {}
  ~kd_session() override { (void)t_->detach(); }

  uint64_t capabilities() override {
    return TOOLHOST_DT_CAP_READ_VIRTUAL | TOOLHOST_DT_CAP_WRITE_VIRTUAL | TOOLHOST_DT_CAP_READ_PHYSICAL |
           TOOLHOST_DT_CAP_WRITE_PHYSICAL | TOOLHOST_DT_CAP_REGISTERS | TOOLHOST_DT_CAP_WRITE_REGISTERS |
           TOOLHOST_DT_CAP_SW_BREAKPOINTS | TOOLHOST_DT_CAP_HW_BREAKPOINTS | TOOLHOST_DT_CAP_WATCHPOINTS |
           TOOLHOST_DT_CAP_RUN_CONTROL | TOOLHOST_DT_CAP_THREADS | TOOLHOST_DT_CAP_OUTPUT | TOOLHOST_DT_CAP_MODULES |
           TOOLHOST_DT_CAP_REBOOT;
  }

  std::string describe() override {
    target& t = *t_;
    std::string json = R"({"arch":"x86_64","os":"windows","kind":"system","registers":[)";
    for (size_t i = 0; i < kRegisterCount; ++i) {
      if (i > 0) json += ",";
      json += absl::StrFormat(R"({"name":"%s","bits":%u,"offset":%u,"role":"%s"})", kRegisters[i].name,
                              kRegisters[i].bits, i * 8, kRegisters[i].role);
    }
    const version_info& v = t.version();
    json += R"(],"hints":{"kernel_base":)" + hex(v.kernel_base) + R"(,"module_list_head":)" +
            hex(v.ps_loaded_module_list) + R"(,"debugger_data_list":)" + hex(v.debugger_data_list) + R"(,"machine":)" +
            hex(v.machine) +
            absl::StrFormat(R"(,"kd_version":"%u.%u","processors":%u)", v.major, v.minor, t.processor_count());
    if (!t.running() && !t.lost()) {
      auto cr = t.read_control_space(t.current_processor(), kAmd64ControlSpaceKspecial, kKspecialReadSize);
      if (cr.ok()) json += R"(,"dtb":)" + hex(get_u64(*cr, kKspecialCr3));
    }
    if (t.last_bugcheck()) {
      const stop_event& b = *t.last_bugcheck();
      json += R"(,"bugcheck":{"code":)" + hex(b.code) + R"(,"parameters":[)";
      for (size_t i = 0; i < b.bugcheck_parameters.size(); ++i) json += (i ? "," : "") + hex(b.bugcheck_parameters[i]);
      json += "]}";
    }
    return json + R"(,"link":)" + sdk::quote(t.describe_link()) + "}}";
  }

  absl::StatusOr<size_t> read_memory(toolhost_dt_space_t space, uint64_t address, absl::Span<uint8_t> out) override {
    std::span<uint8_t> into(out.data(), out.size());
    return space == TOOLHOST_DT_VIRTUAL ? t_->read_virtual(address, into) : t_->read_physical(address, into);
  }

  absl::Status write_memory(toolhost_dt_space_t space, uint64_t address, absl::Span<const uint8_t> data) override {
    std::span<const uint8_t> from(data.data(), data.size());
    return space == TOOLHOST_DT_VIRTUAL ? t_->write_virtual(address, from) : t_->write_physical(address, from);
  }

  absl::StatusOr<std::vector<uint8_t>> read_registers(int64_t thread) override {
    const uint16_t cpu = processor_of(*t_, thread);
    auto ctx = t_->get_context(cpu);
    if (!ctx.ok()) return ctx.status();
    auto special = t_->read_control_space(cpu, kAmd64ControlSpaceKspecial, kKspecialReadSize);
    if (!special.ok()) return special.status();
    std::vector<uint8_t> out(kRegisterBufferSize, 0);
    for (size_t i = 0; i < kRegisterCount; ++i) {
      const register_slot& r = kRegisters[i];
      const auto& from = r.from == register_source::context ? *ctx : *special;
      put_u64(out, i * 8, field(from, r.offset, r.bits));
    }
    return out;
  }

  absl::Status write_register(int64_t thread, uint32_t index, absl::Span<const uint8_t> value) override {
    if (index >= kRegisterCount) {
      return absl::InvalidArgumentError(
          absl::StrFormat("There is no register %u; the map has %u.", index, kRegisterCount));
    }
    uint64_t v = 0;
    std::memcpy(&v, value.data(), std::min<size_t>(value.size(), 8));
    const uint16_t cpu = processor_of(*t_, thread);
    const register_slot& r = kRegisters[index];
    if (r.from == register_source::context) {
      auto ctx = t_->get_context(cpu);
      if (!ctx.ok()) return ctx.status();
      set_field(*ctx, r.offset, r.bits, v);
      return t_->set_context(cpu, *ctx);
    }
    auto special = t_->read_control_space(cpu, kAmd64ControlSpaceKspecial, kKspecialReadSize);
    if (!special.ok()) return special.status();
    set_field(*special, r.offset, r.bits, v);
    return t_->write_control_space(cpu, kAmd64ControlSpaceKspecial, *special);
  }

  absl::Status set_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) override {
    if (type == TOOLHOST_DT_BP_SOFTWARE) return t_->set_breakpoint(address);
    auto kind = hardware_kind(type);
    if (!kind) return absl::InvalidArgumentError(absl::StrFormat("Unknown breakpoint type %d.", type));
    return t_->set_hardware_breakpoint(*kind, address, length == 0 ? 1 : length);
  }

  absl::Status clear_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) override {
    if (type == TOOLHOST_DT_BP_SOFTWARE) return t_->clear_breakpoint(address);
    auto kind = hardware_kind(type);
    if (!kind) return absl::InvalidArgumentError(absl::StrFormat("Unknown breakpoint type %d.", type));
    return t_->clear_hardware_breakpoint(*kind, address, length == 0 ? 1 : length);
  }

  absl::Status resume(toolhost_dt_resume_t how, int64_t thread) override {
    if (how == TOOLHOST_DT_STEP && thread >= 0 && thread != t_->current_processor()) {
      if (auto s = t_->switch_processor(static_cast<uint16_t>(thread)); !s.ok()) return s;
    }
    return t_->resume(how == TOOLHOST_DT_STEP);
  }

  absl::Status interrupt() override { return t_->interrupt(); }

  absl::StatusOr<toolhost_dt_stop_t> wait_stop(std::chrono::milliseconds timeout) override {
    auto got = t_->wait_stop(timeout);
    if (!got.ok()) return got.status();
    if (!got->has_value()) return absl::DeadlineExceededError("the target is running");
    const stop_event& e = **got;
    toolhost_dt_stop_t stop{};
    stop.thread = e.processor;
    stop.pc = e.pc;
    stop.code = e.code;
    stop.address = e.address;
    switch (e.why) {
      case stop_event::reason::breakpoint: stop.reason = TOOLHOST_DT_STOP_BREAKPOINT; break;
      case stop_event::reason::step: stop.reason = TOOLHOST_DT_STOP_STEP; break;
      case stop_event::reason::interrupt: stop.reason = TOOLHOST_DT_STOP_INTERRUPT; break;
      case stop_event::reason::exception: stop.reason = TOOLHOST_DT_STOP_EXCEPTION; break;
      case stop_event::reason::bugcheck: stop.reason = TOOLHOST_DT_STOP_BUGCHECK; break;
      case stop_event::reason::reboot: stop.reason = TOOLHOST_DT_STOP_REBOOT; break;
      case stop_event::reason::module_load: stop.reason = TOOLHOST_DT_STOP_MODULE_LOAD; break;
      case stop_event::reason::watchpoint: stop.reason = TOOLHOST_DT_STOP_WATCHPOINT; break;
      case stop_event::reason::lost:
        stop.reason = TOOLHOST_DT_STOP_UNKNOWN;
        stop.thread = -1;
        break;
    }
    std::snprintf(stop.description, sizeof(stop.description), "%s", e.description.c_str());
    return stop;
  }

  bool is_running() override { return t_->running(); }

  std::vector<sdk::dt_thread> threads() override {
    std::vector<sdk::dt_thread> out;
    for (uint32_t i = 0; i < t_->processor_count(); ++i) {
      out.push_back({i, absl::StrFormat("processor %u", i), i == t_->current_processor()});
    }
    return out;
  }

  absl::Status select_thread(int64_t thread) override {
    if (thread < 0 || thread > 0xFFFF)
      return absl::InvalidArgumentError(absl::StrFormat("Processor %d does not exist.", thread));
    return t_->switch_processor(static_cast<uint16_t>(thread));
  }

  std::vector<sdk::dt_module> modules() override {
    std::vector<sdk::dt_module> out;
    for (const module_event& m : t_->modules()) {
      const size_t slash = m.path.find_last_of("\\/");
      out.push_back({slash == std::string::npos ? m.path : m.path.substr(slash + 1), m.path, m.base, m.size});
    }
    return out;
  }

  std::vector<std::string> take_output() override { return t_->take_output(); }

  absl::StatusOr<std::string> extension(std::string_view operation, const rapidjson::Value& args) override {
    target& t = *t_;
    const std::string op(operation);
    const uint16_t cpu = static_cast<uint16_t>(number(args, "processor").value_or(t.current_processor()));
    auto done = [](const absl::Status& s, std::string json) -> absl::StatusOr<std::string> {
      if (!s.ok()) return s;
      return json;
    };
    if (op == "rdmsr") {
      auto msr = number(args, "msr");
      if (!msr) return absl::InvalidArgumentError("rdmsr needs \"msr\", e.g. {\"msr\":\"0xc0000082\"}.");
      auto v = t.read_msr(cpu, static_cast<uint32_t>(*msr));
      if (!v.ok()) return v.status();
      return R"({"msr":)" + hex(*msr) + R"(,"value":)" + hex(*v) + absl::StrFormat(R"(,"processor":%u})", cpu);
    }
    if (op == "wrmsr") {
      auto msr = number(args, "msr");
      auto value = number(args, "value");
      if (!msr || !value)
        return absl::InvalidArgumentError(
            "wrmsr needs \"msr\" and \"value\", e.g. {\"msr\":\"0xc0000082\",\"value\":\"0x1000\"}.");
      return done(t.write_msr(cpu, static_cast<uint32_t>(*msr), *value),
                  R"({"msr":)" + hex(*msr) + R"(,"value":)" + hex(*value) + "}");
    }
    if (op == "switch_processor") {
      auto n = number(args, "processor");
      if (!n) return absl::InvalidArgumentError("switch_processor needs \"processor\", e.g. {\"processor\":1}.");
      return done(t.switch_processor(static_cast<uint16_t>(*n)), absl::StrFormat(R"({"processor":%u})", *n));
    }
    if (op == "reboot") return done(t.reboot(), R"({"rebooting":true})");
    if (op == "bugcheck" || op == "crash")
      return done(t.cause_bugcheck(), R"({"bugcheck_requested":true,"code":"0xe2"})");
    if (op == "control_space") {
      auto cr = t.read_control_space(cpu, kAmd64ControlSpaceKspecial, kKspecialReadSize);
      if (!cr.ok()) return cr.status();
      std::string json = absl::StrFormat(R"({"processor":%u)", cpu);
      for (const register_slot& r : kRegisters) {
        if (r.from == register_source::special)
          json += absl::StrFormat(R"(,"%s":%s)", r.name, hex(get_u64(*cr, r.offset)));
      }
      return json + "}";
    }
    if (op == "version") {
      auto v = t.get_version();
      if (!v.ok()) return v.status();
      return absl::StrFormat(R"({"major":%u,"minor":%u,"protocol":%u,"flags":"0x%x","machine":"0x%x")", v->major,
                             v->minor, v->protocol, v->flags, v->machine) +
             R"(,"kernel_base":)" + hex(v->kernel_base) + R"(,"ps_loaded_module_list":)" +
             hex(v->ps_loaded_module_list) + R"(,"debugger_data_list":)" + hex(v->debugger_data_list) + "}";
    }
    if (op == "link_stats") {
      const link_stats s = t.stats();
      return absl::StrFormat(
          R"({"sent":%u,"retransmits":%u,"received":%u,"duplicates":%u,"bad_packets":%u,"resets":%u})", s.sent,
          s.retransmits, s.received, s.duplicates, s.bad_packets, s.resets);
    }
    return absl::UnimplementedError(
        "Unknown kd operation '" + op +
        "'; known: rdmsr, wrmsr, switch_processor, reboot, bugcheck, control_space, version, link_stats.");
  }

 private:
  std::unique_ptr<target> t_;
};

}  // namespace

std::unique_ptr<sdk::debug_target> make_session(std::unique_ptr<target> t) {
  return std::make_unique<kd_session>(std::move(t));
}

absl::StatusOr<std::unique_ptr<sdk::debug_target>> attach_session(std::unique_ptr<link> link, target_options options) {
  auto t = target::attach(std::move(link), std::move(options));
  if (!t.ok()) return t.status();
  return make_session(std::move(*t));
}

}  // namespace toolhost::kd
