#include "target.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/status.hpp>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::debugger {

using sdk::string_writer;

namespace {
// An entry appended to the interface after a backend was built is absent from its table.
#define TOOLHOST_DT_OFFERS(raw, field) \
  (TOOLHOST_HAS_FIELD(raw, toolhost_debug_target_t, field) && (raw)->field != nullptr)
}  // namespace

target::target(toolhost_debug_target_t* raw, std::string backend) : raw_(raw), backend_(std::move(backend)) {
  caps_ = raw_->capabilities(raw_);
  describe();
}

target::~target() {
  if (raw_ != nullptr) raw_->close(raw_);
}

void target::describe() {
  string_writer out;
  raw_->describe(raw_, out.raw());
  auto doc = sdk::parse_json(out.text());
  if (!doc || !doc->IsObject()) return;
  arch_ = std::string(sdk::string_member(*doc, "arch").value_or(""));
  kind_ = std::string(sdk::string_member(*doc, "kind").value_or(""));
  os_ = std::string(sdk::string_member(*doc, "os").value_or(""));
  if (const auto* regs = sdk::member(*doc, "registers"); regs != nullptr && regs->IsArray()) {
    uint32_t index = 0;
    for (const auto& r : regs->GetArray()) {
      register_desc d;
      d.name = std::string(sdk::string_member(r, "name").value_or(""));
      for (char& c : d.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const auto* bits = sdk::member(r, "bits");
      const auto* offset = sdk::member(r, "offset");
      d.bits = bits != nullptr && bits->IsUint() ? bits->GetUint() : 0;
      d.offset = offset != nullptr && offset->IsUint() ? offset->GetUint() : 0;
      d.role = std::string(sdk::string_member(r, "role").value_or(""));
      d.index = index++;
      register_bytes_ = std::max<size_t>(register_bytes_, d.offset + (d.bits + 7) / 8);
      registers_.push_back(std::move(d));
    }
  }
  if (const auto* hints = sdk::member(*doc, "hints"); hints != nullptr && hints->IsObject()) {
    for (const auto& m : hints->GetObject()) {
      hints_[m.name.GetString()] = m.value.IsString() ? m.value.GetString() : sdk::to_json(m.value);
    }
  }
}

const register_desc* target::find_register(std::string_view name) const {
  for (const auto& r : registers_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

const register_desc* target::register_with_role(std::string_view role) const {
  for (const auto& r : registers_) {
    if (r.role == role) return &r;
  }
  return nullptr;
}

std::string target::hint(std::string_view name) const {
  auto it = hints_.find(name);
  return it == hints_.end() ? "" : it->second;
}

absl::Status target::check(toolhost_status_t code, const std::string& error, std::string_view what) const {
  return sdk::status_from(code, error, std::string(what) + " failed");
}

absl::StatusOr<std::string> target::read(uint64_t address, size_t size, toolhost_dt_space_t space) {
  if (space == TOOLHOST_DT_VIRTUAL && to_physical_) {
    std::string out;
    while (out.size() < size) {
      const uint64_t va = address + out.size();
      auto pa = to_physical_(va);
      if (!pa.ok()) {
        if (out.empty()) return pa.status();
        break;
      }
      const size_t chunk = std::min<size_t>(size - out.size(), 0x1000 - (va & 0xfff));
      auto bytes = read(*pa, chunk, TOOLHOST_DT_PHYSICAL);
      if (!bytes.ok()) {
        if (out.empty()) return bytes.status();
        break;
      }
      out += *bytes;
      if (bytes->size() < chunk) break;
    }
    return out;
  }
  std::string buffer(size, '\0');
  size_t done = 0;
  string_writer error;
  const auto code = raw_->read_memory(raw_, space, address, buffer.data(), size, &done, error.raw());
  if (auto s = check(code, error.text(), "reading memory"); !s.ok()) return s;
  if (done == 0 && size > 0) return absl::NotFoundError("memory is not readable there");
  buffer.resize(std::min(done, size));
  return buffer;
}

absl::Status target::write(uint64_t address, std::string_view data, toolhost_dt_space_t space) {
  if (space == TOOLHOST_DT_VIRTUAL && to_physical_) {
    for (size_t done = 0; done < data.size();) {
      const uint64_t va = address + done;
      auto pa = to_physical_(va);
      if (!pa.ok()) return pa.status();
      const size_t chunk = std::min<size_t>(data.size() - done, 0x1000 - (va & 0xfff));
      if (auto s = write(*pa, data.substr(done, chunk), TOOLHOST_DT_PHYSICAL); !s.ok()) return s;
      done += chunk;
    }
    return absl::OkStatus();
  }
  string_writer error;
  return check(raw_->write_memory(raw_, space, address, data.data(), data.size(), error.raw()), error.text(),
               "writing memory");
}

absl::StatusOr<register_values> target::read_registers(int64_t thread) {
  std::vector<uint8_t> buffer(std::max<size_t>(register_bytes_, 8) + 64);
  size_t done = 0;
  string_writer error;
  const auto code = raw_->read_registers(raw_, thread, buffer.data(), buffer.size(), &done, error.raw());
  if (auto s = check(code, error.text(), "reading registers"); !s.ok()) return s;
  register_values out;
  for (const auto& r : registers_) {
    if (r.bits == 0 || r.bits > 64 || r.offset + r.bits / 8 > done) continue;
    uint64_t v = 0;
    std::memcpy(&v, buffer.data() + r.offset, r.bits / 8);
    out[r.name] = v;
  }
  return out;
}

absl::Status target::write_register(const register_desc& reg, uint64_t value, int64_t thread) {
  string_writer error;
  return check(raw_->write_register(raw_, thread, reg.index, &value, reg.bits / 8, error.raw()), error.text(),
               "writing " + reg.name);
}

absl::Status target::set_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) {
  string_writer error;
  return check(raw_->set_breakpoint(raw_, type, address, length, error.raw()), error.text(), "setting a breakpoint");
}

absl::Status target::clear_breakpoint(toolhost_dt_breakpoint_type_t type, uint64_t address, uint32_t length) {
  string_writer error;
  return check(raw_->clear_breakpoint(raw_, type, address, length, error.raw()), error.text(), "clearing a breakpoint");
}

absl::Status target::resume(toolhost_dt_resume_t how, int64_t thread, int signal) {
  string_writer error;
  if (signal == 0) return check(raw_->resume(raw_, how, thread, error.raw()), error.text(), "resuming");
  if (!can_deliver_signals()) {
    return absl::UnimplementedError("the " + backend_ + " backend cannot deliver a signal to the target");
  }
  return check(raw_->resume_with_signal(raw_, how, thread, signal, error.raw()), error.text(),
               "resuming with a signal");
}

bool target::can_deliver_signals() const { return TOOLHOST_DT_OFFERS(raw_, resume_with_signal); }

absl::Status target::pass_signals(const std::vector<int32_t>& signals) {
  if (!TOOLHOST_DT_OFFERS(raw_, pass_signals)) return absl::UnimplementedError("no signal filter in the backend");
  string_writer error;
  return check(raw_->pass_signals(raw_, signals.data(), signals.size(), error.raw()), error.text(),
               "setting the signals passed to the program");
}

absl::StatusOr<std::string> target::siginfo() {
  if (!TOOLHOST_DT_OFFERS(raw_, read_siginfo)) {
    return absl::UnimplementedError("the " + backend_ + " backend does not read siginfo");
  }
  std::string buffer(512, '\0');
  size_t done = 0;
  string_writer error;
  const auto code = raw_->read_siginfo(raw_, buffer.data(), buffer.size(), &done, error.raw());
  if (auto s = check(code, error.text(), "reading siginfo"); !s.ok()) return s;
  buffer.resize(std::min(done, buffer.size()));
  return buffer;
}

absl::Status target::interrupt() {
  string_writer error;
  return check(raw_->interrupt(raw_, error.raw()), error.text(), "interrupting");
}

absl::StatusOr<std::optional<toolhost_dt_stop_t>> target::wait_stop(std::chrono::milliseconds timeout) {
  toolhost_dt_stop_t stop{};
  stop.struct_size = sizeof(stop);
  string_writer error;
  const auto code =
      raw_->wait_stop(raw_, static_cast<uint32_t>(std::max<int64_t>(0, timeout.count())), &stop, error.raw());
  if (code == TOOLHOST_ERR_TIMEOUT) return std::optional<toolhost_dt_stop_t>();
  if (code == TOOLHOST_ERR_WRONG_STATE) return std::optional<toolhost_dt_stop_t>();
  if (auto s = check(code, error.text(), "waiting for a stop"); !s.ok()) return s;
  return std::optional<toolhost_dt_stop_t>(stop);
}

bool target::is_running() { return raw_->is_running(raw_); }

std::vector<thread_info> target::threads() {
  string_writer out;
  raw_->list_threads(raw_, out.raw());
  std::vector<thread_info> list;
  auto doc = sdk::parse_json(out.text());
  if (!doc || !doc->IsArray()) return list;
  for (const auto& t : doc->GetArray()) {
    thread_info info;
    const auto* id = sdk::member(t, "id");
    info.id = id != nullptr && id->IsInt64() ? id->GetInt64() : 0;
    info.name = std::string(sdk::string_member(t, "name").value_or(""));
    const auto* current = sdk::member(t, "current");
    info.current = current != nullptr && current->IsBool() && current->GetBool();
    list.push_back(std::move(info));
  }
  return list;
}

absl::Status target::select_thread(int64_t id) {
  string_writer error;
  return check(raw_->select_thread(raw_, id, error.raw()), error.text(), "selecting a thread");
}

std::vector<module_info> target::modules() {
  string_writer out;
  raw_->list_modules(raw_, out.raw());
  std::vector<module_info> list;
  auto doc = sdk::parse_json(out.text());
  if (!doc || !doc->IsArray()) return list;
  auto number = [](const rapidjson::Value& v, const char* name) -> uint64_t {
    auto s = sdk::string_member(v, name);
    if (!s) return 0;
    return std::strtoull(std::string(*s).c_str(), nullptr, 0);
  };
  for (const auto& m : doc->GetArray()) {
    module_info info;
    info.name = std::string(sdk::string_member(m, "name").value_or(""));
    info.path = std::string(sdk::string_member(m, "path").value_or(""));
    info.base = number(m, "base");
    info.size = number(m, "size");
    list.push_back(std::move(info));
  }
  return list;
}

absl::StatusOr<std::string> target::extension(std::string_view operation, std::string_view args_json) {
  string_writer out;
  const std::string op(operation), args(args_json);
  const auto code = raw_->extension(raw_, op.c_str(), args.c_str(), out.raw());
  if (code == TOOLHOST_ERR_UNSUPPORTED) {
    return absl::UnimplementedError("the " + backend_ + " backend does not offer '" + op + "'" +
                                    (out.text().empty() ? "" : " (" + out.text() + ")"));
  }
  if (auto s = check(code, out.text(), op); !s.ok()) return s;
  return out.take();
}

std::string target::read_output() {
  string_writer out;
  raw_->read_output(raw_, out.raw());
  return out.take();
}

}  // namespace toolhost::debugger
