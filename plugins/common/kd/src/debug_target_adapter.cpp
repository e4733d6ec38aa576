#include "toolhost/kd/debug_target_adapter.h"

#include <cstring>
#include <optional>

#include <absl/strings/str_format.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "toolhost/kd/bytes.h"
#include "toolhost/kd/protocol.h"

namespace toolhost::kd {
namespace {

namespace sdk = toolhost::sdk;

// Where a register of the map comes from.
enum class source { context, special };
struct reg {
  const char* name;
  uint32_t bits;
  const char* role;
  source from;
  size_t offset;  // in the CONTEXT or in KSPECIAL_REGISTERS
};

// Our buffer puts every register in an 8-byte slot, in this order.
constexpr reg kRegisters[] = {
    {"rax", 64, "", source::context, 0x78},      {"rbx", 64, "", source::context, 0x90},
    {"rcx", 64, "", source::context, 0x80},      {"rdx", 64, "", source::context, 0x88},
    {"rsi", 64, "", source::context, 0xA8},      {"rdi", 64, "", source::context, 0xB0},
    {"rbp", 64, "fp", source::context, 0xA0},    {"rsp", 64, "sp", source::context, 0x98},
    {"r8", 64, "", source::context, 0xB8},       {"r9", 64, "", source::context, 0xC0},
    {"r10", 64, "", source::context, 0xC8},      {"r11", 64, "", source::context, 0xD0},
    {"r12", 64, "", source::context, 0xD8},      {"r13", 64, "", source::context, 0xE0},
    {"r14", 64, "", source::context, 0xE8},      {"r15", 64, "", source::context, 0xF0},
    {"rip", 64, "pc", source::context, kContextRip},
    {"eflags", 32, "flags", source::context, kContextEflags},
    {"cs", 16, "", source::context, 0x38},       {"ds", 16, "", source::context, 0x3A},
    {"es", 16, "", source::context, 0x3C},       {"fs", 16, "", source::context, 0x3E},
    {"gs", 16, "", source::context, 0x40},       {"ss", 16, "", source::context, 0x42},
    {"dr0", 64, "", source::special, 0x20},      {"dr1", 64, "", source::special, 0x28},
    {"dr2", 64, "", source::special, 0x30},      {"dr3", 64, "", source::special, 0x38},
    {"dr6", 64, "", source::special, 0x40},      {"dr7", 64, "", source::special, 0x48},
    {"cr0", 64, "", source::special, kKspecialCr0}, {"cr2", 64, "", source::special, kKspecialCr2},
    {"cr3", 64, "cr3", source::special, kKspecialCr3}, {"cr4", 64, "", source::special, kKspecialCr4},
};
constexpr size_t kRegisterCount = sizeof(kRegisters) / sizeof(kRegisters[0]);
constexpr size_t kBufferSize = kRegisterCount * 8;

uint64_t field(std::span<const uint8_t> b, size_t at, uint32_t bits) {
  if (bits == 16) return get_u16(b, at);
  if (bits == 32) return get_u32(b, at);
  return get_u64(b, at);
}
void set_field(std::vector<uint8_t>& b, size_t at, uint32_t bits, uint64_t v) {
  if (bits == 16) put_u16(b, at, static_cast<uint16_t>(v));
  else if (bits == 32) put_u32(b, at, static_cast<uint32_t>(v));
  else put_u64(b, at, v);
}

std::string hex(uint64_t v) { return absl::StrFormat("\"0x%x\"", v); }

struct session {
  toolhost_debug_target_t abi{};
  std::unique_ptr<target> t;
};

target& of(toolhost_debug_target_t* p) { return *static_cast<session*>(p->impl)->t; }

toolhost_status_t fail(const absl::Status& s, toolhost_writer_t* error) {
  sdk::write(error, std::string(s.message()));
  switch (s.code()) {
    case absl::StatusCode::kNotFound: return TOOLHOST_ERR_NOT_FOUND;
    case absl::StatusCode::kInvalidArgument: return TOOLHOST_ERR_INVALID_ARGUMENT;
    case absl::StatusCode::kFailedPrecondition: return TOOLHOST_ERR_WRONG_STATE;
    case absl::StatusCode::kDeadlineExceeded: return TOOLHOST_ERR_TIMEOUT;
    case absl::StatusCode::kUnimplemented: return TOOLHOST_ERR_UNSUPPORTED;
    default: return TOOLHOST_ERR_INTERNAL;
  }
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

uint64_t capabilities(toolhost_debug_target_t*) {
  return TOOLHOST_DT_CAP_READ_VIRTUAL | TOOLHOST_DT_CAP_WRITE_VIRTUAL | TOOLHOST_DT_CAP_READ_PHYSICAL |
         TOOLHOST_DT_CAP_WRITE_PHYSICAL | TOOLHOST_DT_CAP_REGISTERS | TOOLHOST_DT_CAP_WRITE_REGISTERS |
         TOOLHOST_DT_CAP_SW_BREAKPOINTS | TOOLHOST_DT_CAP_HW_BREAKPOINTS | TOOLHOST_DT_CAP_WATCHPOINTS |
         TOOLHOST_DT_CAP_RUN_CONTROL | TOOLHOST_DT_CAP_THREADS |
         TOOLHOST_DT_CAP_OUTPUT | TOOLHOST_DT_CAP_MODULES | TOOLHOST_DT_CAP_REBOOT;
}

void close_session(toolhost_debug_target_t* p) {
  auto* s = static_cast<session*>(p->impl);
  (void)s->t->detach();
  delete s;
}

void describe(toolhost_debug_target_t* p, toolhost_writer_t* out) {
  target& t = of(p);
  std::string json = R"({"arch":"x86_64","os":"windows","kind":"system","registers":[)";
  for (size_t i = 0; i < kRegisterCount; ++i) {
    if (i > 0) json += ",";
    json += absl::StrFormat(R"({"name":"%s","bits":%u,"offset":%u,"role":"%s"})", kRegisters[i].name,
                            kRegisters[i].bits, i * 8, kRegisters[i].role);
  }
  const version_info& v = t.version();
  json += R"(],"hints":{"kernel_base":)" + hex(v.kernel_base) + R"(,"module_list_head":)" +
          hex(v.ps_loaded_module_list) + R"(,"debugger_data_list":)" + hex(v.debugger_data_list) +
          R"(,"machine":)" + hex(v.machine) + absl::StrFormat(R"(,"kd_version":"%u.%u","processors":%u)", v.major, v.minor, t.processor_count());
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
  json += R"(,"link":)" + sdk::quote(t.describe_link()) + "}}";
  sdk::write(out, json);
}

toolhost_status_t read_memory(toolhost_debug_target_t* p, toolhost_dt_space_t space, uint64_t address, void* buffer,
                              size_t size, size_t* done, toolhost_writer_t* error) {
  *done = 0;
  if (space != TOOLHOST_DT_VIRTUAL && space != TOOLHOST_DT_PHYSICAL) {
    sdk::write(error, "The kd backend reads virtual or physical memory only.");
    return TOOLHOST_ERR_UNSUPPORTED;
  }
  std::span<uint8_t> into(static_cast<uint8_t*>(buffer), size);
  auto n = space == TOOLHOST_DT_VIRTUAL ? of(p).read_virtual(address, into) : of(p).read_physical(address, into);
  if (!n.ok()) return fail(n.status(), error);
  *done = *n;
  if (*n == 0 && size > 0) {
    sdk::write(error, absl::StrFormat("Nothing is mapped at %s address 0x%x.", space == TOOLHOST_DT_VIRTUAL ? "virtual" : "physical", address));
    return TOOLHOST_ERR_NOT_FOUND;
  }
  return TOOLHOST_OK;
}

toolhost_status_t write_memory(toolhost_debug_target_t* p, toolhost_dt_space_t space, uint64_t address,
                               const void* data, size_t size, toolhost_writer_t* error) {
  if (space != TOOLHOST_DT_VIRTUAL && space != TOOLHOST_DT_PHYSICAL) {
    sdk::write(error, "The kd backend writes virtual or physical memory only.");
    return TOOLHOST_ERR_UNSUPPORTED;
  }
  std::span<const uint8_t> from(static_cast<const uint8_t*>(data), size);
  auto s = space == TOOLHOST_DT_VIRTUAL ? of(p).write_virtual(address, from) : of(p).write_physical(address, from);
  return s.ok() ? TOOLHOST_OK : fail(s, error);
}

uint16_t processor_of(target& t, int64_t thread) {
  return thread < 0 ? t.current_processor() : static_cast<uint16_t>(thread);
}

toolhost_status_t read_registers(toolhost_debug_target_t* p, int64_t thread, void* buffer, size_t size, size_t* done,
                                 toolhost_writer_t* error) {
  *done = 0;
  target& t = of(p);
  const uint16_t cpu = processor_of(t, thread);
  auto ctx = t.get_context(cpu);
  if (!ctx.ok()) return fail(ctx.status(), error);
  auto special = t.read_control_space(cpu, kAmd64ControlSpaceKspecial, kKspecialReadSize);
  if (!special.ok()) return fail(special.status(), error);
  std::vector<uint8_t> out(kBufferSize, 0);
  for (size_t i = 0; i < kRegisterCount; ++i) {
    const reg& r = kRegisters[i];
    const auto& from = r.from == source::context ? *ctx : *special;
    put_u64(out, i * 8, field(from, r.offset, r.bits));
  }
  const size_t n = std::min(size, out.size());
  std::memcpy(buffer, out.data(), n);
  *done = n;
  return TOOLHOST_OK;
}

toolhost_status_t write_register(toolhost_debug_target_t* p, int64_t thread, uint32_t index, const void* value,
                                 size_t size, toolhost_writer_t* error) {
  if (index >= kRegisterCount) {
    sdk::write(error, absl::StrFormat("There is no register %u; the map has %u.", index, kRegisterCount));
    return TOOLHOST_ERR_INVALID_ARGUMENT;
  }
  uint64_t v = 0;
  std::memcpy(&v, value, std::min<size_t>(size, 8));
  target& t = of(p);
  const uint16_t cpu = processor_of(t, thread);
  const reg& r = kRegisters[index];
  if (r.from == source::context) {
    auto ctx = t.get_context(cpu);
    if (!ctx.ok()) return fail(ctx.status(), error);
    set_field(*ctx, r.offset, r.bits, v);
    auto s = t.set_context(cpu, *ctx);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  }
  auto special = t.read_control_space(cpu, kAmd64ControlSpaceKspecial, kKspecialReadSize);
  if (!special.ok()) return fail(special.status(), error);
  set_field(*special, r.offset, r.bits, v);
  auto s = t.write_control_space(cpu, kAmd64ControlSpaceKspecial, *special);
  return s.ok() ? TOOLHOST_OK : fail(s, error);
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

toolhost_status_t set_breakpoint(toolhost_debug_target_t* p, toolhost_dt_breakpoint_type_t type, uint64_t address,
                                 uint32_t length, toolhost_writer_t* error) {
  if (type == TOOLHOST_DT_BP_SOFTWARE) {
    auto s = of(p).set_breakpoint(address);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  }
  auto kind = hardware_kind(type);
  if (!kind) {
    sdk::write(error, absl::StrFormat("Unknown breakpoint type %d.", type));
    return TOOLHOST_ERR_INVALID_ARGUMENT;
  }
  auto s = of(p).set_hardware_breakpoint(*kind, address, length == 0 ? 1 : length);
  return s.ok() ? TOOLHOST_OK : fail(s, error);
}

toolhost_status_t clear_breakpoint(toolhost_debug_target_t* p, toolhost_dt_breakpoint_type_t type, uint64_t address,
                                   uint32_t length, toolhost_writer_t* error) {
  if (type == TOOLHOST_DT_BP_SOFTWARE) {
    auto s = of(p).clear_breakpoint(address);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  }
  auto kind = hardware_kind(type);
  if (!kind) {
    sdk::write(error, absl::StrFormat("Unknown breakpoint type %d.", type));
    return TOOLHOST_ERR_INVALID_ARGUMENT;
  }
  auto s = of(p).clear_hardware_breakpoint(*kind, address, length == 0 ? 1 : length);
  return s.ok() ? TOOLHOST_OK : fail(s, error);
}

toolhost_status_t resume(toolhost_debug_target_t* p, toolhost_dt_resume_t how, int64_t thread, toolhost_writer_t* error) {
  target& t = of(p);
  if (how == TOOLHOST_DT_STEP && thread >= 0 && thread != t.current_processor()) {
    if (auto s = t.switch_processor(static_cast<uint16_t>(thread)); !s.ok()) return fail(s, error);
  }
  auto s = t.resume(how == TOOLHOST_DT_STEP);
  return s.ok() ? TOOLHOST_OK : fail(s, error);
}

toolhost_status_t interrupt(toolhost_debug_target_t* p, toolhost_writer_t* error) {
  auto s = of(p).interrupt();
  return s.ok() ? TOOLHOST_OK : fail(s, error);
}

toolhost_status_t wait_stop(toolhost_debug_target_t* p, uint32_t timeout_ms, toolhost_dt_stop_t* stop,
                            toolhost_writer_t* error) {
  auto got = of(p).wait_stop(std::chrono::milliseconds(timeout_ms));
  if (!got.ok()) return fail(got.status(), error);
  if (!got->has_value()) return TOOLHOST_ERR_TIMEOUT;
  const stop_event& e = **got;
  std::memset(stop, 0, sizeof(*stop));
  stop->struct_size = sizeof(*stop);
  stop->thread = e.processor;
  stop->pc = e.pc;
  stop->code = e.code;
  stop->address = e.address;
  switch (e.why) {
    case stop_event::reason::breakpoint: stop->reason = TOOLHOST_DT_STOP_BREAKPOINT; break;
    case stop_event::reason::step: stop->reason = TOOLHOST_DT_STOP_STEP; break;
    case stop_event::reason::interrupt: stop->reason = TOOLHOST_DT_STOP_INTERRUPT; break;
    case stop_event::reason::exception: stop->reason = TOOLHOST_DT_STOP_EXCEPTION; break;
    case stop_event::reason::bugcheck: stop->reason = TOOLHOST_DT_STOP_BUGCHECK; break;
    case stop_event::reason::reboot: stop->reason = TOOLHOST_DT_STOP_REBOOT; break;
    case stop_event::reason::module_load: stop->reason = TOOLHOST_DT_STOP_MODULE_LOAD; break;
    case stop_event::reason::watchpoint: stop->reason = TOOLHOST_DT_STOP_WATCHPOINT; break;
    case stop_event::reason::lost: stop->reason = TOOLHOST_DT_STOP_UNKNOWN; stop->thread = -1; break;
  }
  std::snprintf(stop->description, sizeof(stop->description), "%s", e.description.c_str());
  return TOOLHOST_OK;
}

bool is_running(toolhost_debug_target_t* p) { return of(p).running(); }

void list_threads(toolhost_debug_target_t* p, toolhost_writer_t* out) {
  target& t = of(p);
  std::string json = "[";
  for (uint32_t i = 0; i < t.processor_count(); ++i) {
    if (i > 0) json += ",";
    json += absl::StrFormat(R"({"id":%u,"name":"processor %u","current":%s})", i, i,
                            i == t.current_processor() ? "true" : "false");
  }
  sdk::write(out, json + "]");
}

toolhost_status_t select_thread(toolhost_debug_target_t* p, int64_t thread, toolhost_writer_t* error) {
  if (thread < 0 || thread > 0xFFFF) {
    sdk::write(error, absl::StrFormat("Processor %d does not exist.", thread));
    return TOOLHOST_ERR_INVALID_ARGUMENT;
  }
  auto s = of(p).switch_processor(static_cast<uint16_t>(thread));
  return s.ok() ? TOOLHOST_OK : fail(s, error);
}

void list_modules(toolhost_debug_target_t* p, toolhost_writer_t* out) {
  std::string json = "[";
  bool first = true;
  for (const module_event& m : of(p).modules()) {
    if (!first) json += ",";
    first = false;
    const size_t slash = m.path.find_last_of("\\/");
    const std::string name = slash == std::string::npos ? m.path : m.path.substr(slash + 1);
    json += R"({"name":)" + sdk::quote(name) + R"(,"path":)" + sdk::quote(m.path) + R"(,"base":)" + hex(m.base) +
            R"(,"size":)" + hex(m.size) + "}";
  }
  sdk::write(out, json + "]");
}

void read_output(toolhost_debug_target_t* p, toolhost_writer_t* out) {
  for (const std::string& line : of(p).take_output()) sdk::write(out, line + "\n");
}

toolhost_status_t extension(toolhost_debug_target_t* p, const char* operation, const char* args_json,
                            toolhost_writer_t* out) {
  target& t = of(p);
  std::string parse_error;
  auto doc = sdk::parse_json(args_json != nullptr && *args_json != '\0' ? args_json : "{}", &parse_error);
  if (!doc || !doc->IsObject()) {
    sdk::write(out, "The arguments must be a JSON object" + (parse_error.empty() ? std::string(".") : ": " + parse_error));
    return TOOLHOST_ERR_INVALID_ARGUMENT;
  }
  const std::string op = operation != nullptr ? operation : "";
  const uint16_t cpu = static_cast<uint16_t>(number(*doc, "processor").value_or(t.current_processor()));
  auto done = [&](const absl::Status& s, const std::string& json) {
    if (!s.ok()) return fail(s, out);
    sdk::write(out, json);
    return TOOLHOST_OK;
  };
  if (op == "rdmsr") {
    auto msr = number(*doc, "msr");
    if (!msr) return done(absl::InvalidArgumentError("rdmsr needs \"msr\", e.g. {\"msr\":\"0xc0000082\"}."), "");
    auto v = t.read_msr(cpu, static_cast<uint32_t>(*msr));
    if (!v.ok()) return fail(v.status(), out);
    return done(absl::OkStatus(), R"({"msr":)" + hex(*msr) + R"(,"value":)" + hex(*v) + absl::StrFormat(R"(,"processor":%u})", cpu));
  }
  if (op == "wrmsr") {
    auto msr = number(*doc, "msr");
    auto value = number(*doc, "value");
    if (!msr || !value) return done(absl::InvalidArgumentError("wrmsr needs \"msr\" and \"value\", e.g. {\"msr\":\"0xc0000082\",\"value\":\"0x1000\"}."), "");
    return done(t.write_msr(cpu, static_cast<uint32_t>(*msr), *value), R"({"msr":)" + hex(*msr) + R"(,"value":)" + hex(*value) + "}");
  }
  if (op == "switch_processor") {
    auto n = number(*doc, "processor");
    if (!n) return done(absl::InvalidArgumentError("switch_processor needs \"processor\", e.g. {\"processor\":1}."), "");
    return done(t.switch_processor(static_cast<uint16_t>(*n)), absl::StrFormat(R"({"processor":%u})", *n));
  }
  if (op == "reboot") return done(t.reboot(), R"({"rebooting":true})");
  if (op == "bugcheck" || op == "crash") return done(t.cause_bugcheck(), R"({"bugcheck_requested":true,"code":"0xe2"})");
  if (op == "control_space") {
    auto cr = t.read_control_space(cpu, kAmd64ControlSpaceKspecial, kKspecialReadSize);
    if (!cr.ok()) return fail(cr.status(), out);
    std::string json = absl::StrFormat(R"({"processor":%u)", cpu);
    for (const reg& r : kRegisters) {
      if (r.from == source::special) json += absl::StrFormat(R"(,"%s":%s)", r.name, hex(get_u64(*cr, r.offset)));
    }
    return done(absl::OkStatus(), json + "}");
  }
  if (op == "version") {
    auto v = t.get_version();
    if (!v.ok()) return fail(v.status(), out);
    return done(absl::OkStatus(),
                absl::StrFormat(R"({"major":%u,"minor":%u,"protocol":%u,"flags":"0x%x","machine":"0x%x")", v->major, v->minor,
                                v->protocol, v->flags, v->machine) +
                    R"(,"kernel_base":)" + hex(v->kernel_base) + R"(,"ps_loaded_module_list":)" + hex(v->ps_loaded_module_list) +
                    R"(,"debugger_data_list":)" + hex(v->debugger_data_list) + "}");
  }
  if (op == "link_stats") {
    const link_stats s = t.stats();
    return done(absl::OkStatus(), absl::StrFormat(R"({"sent":%u,"retransmits":%u,"received":%u,"duplicates":%u,"bad_packets":%u,"resets":%u})",
                                                  s.sent, s.retransmits, s.received, s.duplicates, s.bad_packets, s.resets));
  }
  sdk::write(out, "Unknown kd operation '" + op +
                      "'; known: rdmsr, wrmsr, switch_processor, reboot, bugcheck, control_space, version, link_stats.");
  return TOOLHOST_ERR_UNSUPPORTED;
}

}  // namespace

toolhost_debug_target_t* make_debug_target(std::unique_ptr<target> t) {
  auto* s = new session;
  s->t = std::move(t);
  toolhost_debug_target_t& a = s->abi;
  a.struct_size = sizeof(a);
  a.impl = s;
  a.capabilities = capabilities;
  a.close = close_session;
  a.describe = describe;
  a.read_memory = read_memory;
  a.write_memory = write_memory;
  a.read_registers = read_registers;
  a.write_register = write_register;
  a.set_breakpoint = set_breakpoint;
  a.clear_breakpoint = clear_breakpoint;
  a.resume = resume;
  a.interrupt = interrupt;
  a.wait_stop = wait_stop;
  a.is_running = is_running;
  a.list_threads = list_threads;
  a.select_thread = select_thread;
  a.list_modules = list_modules;
  a.read_output = read_output;
  a.extension = extension;
  return &s->abi;
}

toolhost_debug_target_t* attach_debug_target(std::unique_ptr<link> link, target_options options,
                                             toolhost_writer_t* error) {
  auto t = target::attach(std::move(link), std::move(options));
  if (!t.ok()) {
    sdk::write(error, std::string(t.status().message()));
    return nullptr;
  }
  return make_debug_target(std::move(*t));
}

}  // namespace toolhost::kd
